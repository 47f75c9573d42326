#!/usr/bin/env bash
# Part of `make test`: libplacer exports only `pl_` symbols (a generic prefix such as `ir_` or
# `sim_` would collide with a user's own code) and holds one member per module, each named once
# (README, "What the library exports"). Prints one line per exported non-`pl_` symbol and per
# repeated member name; exit status 1 if there is any.
set -euo pipefail
lib=${1:?usage: tools/check_symbols.sh LIBRARY.a}
[ -f "$lib" ] || { echo "check_symbols: $lib: no such library" >&2; exit 2; }
bad=0
# nm prints "MEMBER:" before each member's symbols and "VALUE TYPE NAME" per defined global
while read -r member sym; do
  echo "check_symbols: $lib: $member exports $sym (only pl_ symbols may be exported)"
  bad=$((bad + 1))
done < <(nm --defined-only -g "$lib" | awk '
  /:$/ { member = substr($0, 1, length($0) - 1); next }
  NF == 3 && $3 !~ /^pl_/ { print member, $3 }')
while read -r member; do
  echo "check_symbols: $lib: member name $member appears more than once"
  bad=$((bad + 1))
done < <(ar t "$lib" | sort | uniq -d)
if [ "$bad" -gt 0 ]; then
  echo "check_symbols: $lib: $bad problems" >&2
  exit 1
fi
echo "check_symbols: $lib exports only pl_ symbols ($(nm --defined-only -g "$lib" | awk 'NF == 3' | wc -l) symbols, $(ar t "$lib" | wc -l) members)"
