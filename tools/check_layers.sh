#!/usr/bin/env bash
# Checks the include graph of src/ against the layer diagram in docs/layers.md (issue 28):
# every #include of a module's file (src/MODULE/*.c, src/MODULE/*.h, and the module's public
# header include/placer/MODULE.h) must name the module itself or one drawn on a LOWER row of
# the diagram. "placer/X.h" belongs to module X; a local include ("sched.h", "../x/y.h") to
# the folder it resolves to; one that resolves to no file under src/ (the generated
# "onnx/onnx.pb-c.h") is outside the modules. Prints each violation as FILE:LINE and the arrow,
# and exits 1 on any; also when a folder of src/ is missing from the diagram or the diagram
# names one that does not exist. Run by `make test` before the test binaries.
set -u
cd "$(dirname "$0")/.." || exit 1
diagram=${1:-docs/layers.md}
[ -r "$diagram" ] || { echo "check_layers: $diagram: cannot read the diagram" >&2; exit 1; }
mods=$(for d in src/*/; do d=${d%/}; echo "${d#src/}"; done)
awk -v mods="$mods" -v diagram="$diagram" '
# pass 1: the first fenced block of the diagram, rows top to bottom; rank 1 is the bottom row
FNR == NR {
    if ($0 ~ /^```/) { fence++; next }
    if (fence != 1 || NF == 0) next
    nrow++
    for (i = 1; i <= NF; i++) { rowof[$i] = nrow; rowline[$i] = FNR }
    next
}
FNR == 1 {
    if (!started) {
        started = 1
        for (m in rowof) rank[m] = nrow - rowof[m] + 1
        n = split(mods, ms, /[ \n]+/)
        for (i = 1; i <= n; i++) {
            if (ms[i] == "") continue
            isdir[ms[i]] = 1
            if (!(ms[i] in rank)) { printf "%s: src/%s is not in the diagram\n", diagram, ms[i]; bad++ }
        }
        for (m in rank)
            if (m != "cli" && !(m in isdir)) {
                printf "%s:%d: \"%s\" is no folder of src/\n", diagram, rowline[m], m; bad++
            }
    }
    file = FILENAME
    if (file ~ /^include\/placer\//) { mod = file; sub(/^include\/placer\//, "", mod); sub(/\.h$/, "", mod); dir = "include/placer" }
    else { mod = file; sub(/^src\//, "", mod); sub(/\/.*/, "", mod); dir = file; sub(/\/[^\/]*$/, "", dir) }
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    to = ""
    if (inc ~ /^placer\/[A-Za-z0-9_]+\.h$/) { to = inc; sub(/^placer\//, "", to); sub(/\.h$/, "", to) }
    else {
        path = dir "/" inc
        # resolve "." and ".." so that "../train/x.h" names its folder
        k = split(path, parts, "/"); np = 0
        for (i = 1; i <= k; i++) {
            if (parts[i] == "." || parts[i] == "") continue
            if (parts[i] == "..") { if (np > 0) np--; continue }
            out[++np] = parts[i]
        }
        path = out[1]; for (i = 2; i <= np; i++) path = path "/" out[i]
        # a file under src/MODULE/ belongs to MODULE; one that is no file (generated) to none
        if ((getline junk < path) >= 0) { close(path); if (out[1] == "src" && np >= 3) to = out[2] }
    }
    if (to == "" || to == mod) next
    checked++
    if (!(to in rank)) { printf "%s:%d: includes \"%s\": module %s is not in the diagram\n", FILENAME, FNR, inc, to; bad++; next }
    if (!(mod in rank)) next
    if (rank[to] >= rank[mod]) {
        printf "%s:%d: %s -> %s (\"%s\"): %s is drawn %s %s in %s\n", FILENAME, FNR, mod, to, inc, to,
               rank[to] == rank[mod] ? "on the same row as" : "above", mod, diagram
        bad++
    }
}
END {
    if (bad) { printf "check_layers: %d upward or unknown arrow(s) against %s\n", bad, diagram; exit 1 }
    printf "check_layers: %d includes across modules, none upward against %s\n", checked, diagram
}
' "$diagram" src/*/*.c src/*/*.h include/placer/*.h
