#!/usr/bin/env bash
# Part of `make test`: libplacer exports only `pl_` symbols (a generic prefix such as `ir_` or
# `sim_` would collide with a user's own code) and holds one member per module, each named once
# (docs/guide/setup.md, "What the library exports"). Prints one line per exported non-`pl_` symbol and per
# repeated member name; exit status 1 if there is any.
set -euo pipefail
lib=${1:?usage: tools/check_symbols.sh LIBRARY.a}
[ -f "$lib" ] || { echo "check_symbols: $lib: no such library" >&2; exit 2; }
# nm and ar once each; an archive they cannot read is an error, not a pass
syms=$(nm --defined-only -g "$lib") || { echo "check_symbols: $lib: nm failed" >&2; exit 2; }
members=$(ar t "$lib") || { echo "check_symbols: $lib: ar failed" >&2; exit 2; }
bad=0
# nm prints "MEMBER:" before each member's symbols and "VALUE TYPE NAME" per defined global
while read -r member sym; do
  echo "check_symbols: $lib: $member exports $sym (only pl_ symbols may be exported)"
  bad=$((bad + 1))
done < <(awk '
  /:$/ { member = substr($0, 1, length($0) - 1); next }
  NF == 3 && $3 !~ /^pl_/ { print member, $3 }' <<<"$syms")
while read -r member; do
  [ -n "$member" ] || continue
  echo "check_symbols: $lib: member name $member appears more than once"
  bad=$((bad + 1))
done < <(sort <<<"$members" | uniq -d)
if [ "$bad" -gt 0 ]; then
  echo "check_symbols: $lib: $bad problems" >&2
  exit 1
fi
echo "check_symbols: $lib exports only pl_ symbols ($(awk 'NF == 3' <<<"$syms" | wc -l) symbols, $(wc -l <<<"$members") members)"
