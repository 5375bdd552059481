#!/usr/bin/env bash
# Builds an `openssl` command from the sources the openssl-src crate carries (OpenSSL 4.0,
# whose `openssl` reads and writes ML-KEM and ML-DSA keys, KEMRecipientInfo in CMS, and
# negotiates X25519MLKEM768 in TLS), once, into target/openssl-pq/. The distribution's
# OpenSSL (3.0) has none of these; the interoperability tests of issue 48 use this one.
#
#   tools/openssl-pq.sh        build unless target/openssl-pq/bin/openssl is this version
#   tools/openssl-pq.sh --path print the path of the `openssl` command (building it first)
#
# The source is the crate's, as locked in Cargo.lock (a dev-dependency of sealmq-cli), fetched
# by cargo from crates.io; nothing else is downloaded. About 10 minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
prefix=$root/target/openssl-pq
src=$(cargo metadata --format-version 1 --locked 2>/dev/null | python3 -c '
import json, os, sys
m = json.load(sys.stdin)
for p in m["packages"]:
    if p["name"] == "openssl-src":
        print(os.path.join(os.path.dirname(p["manifest_path"]), "openssl"))
        break
')
if [ -z "$src" ] || [ ! -x "$src/Configure" ]; then
  echo "tools/openssl-pq.sh: the openssl-src crate's sources were not found (cargo fetch?)" >&2
  exit 1
fi
want=$(sed -n 's/.*openssl-src-\([^/]*\)\/openssl$/\1/p' <<<"$src")
stamp=$prefix/.built-from
if [ -x "$prefix/bin/openssl" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  [ "${1:-}" = "--path" ] && echo "$prefix/bin/openssl"
  exit 0
fi
printf '== building OpenSSL from openssl-src %s into target/openssl-pq (once)\n' "$want" >&2
build=$root/target/openssl-pq-build
rm -rf "$build" "$prefix"
mkdir -p "$build"
cd "$build"
# Static, no documentation, no tests: the command and its libraries only.
"$src/Configure" --prefix="$prefix" --libdir=lib --openssldir="$prefix/ssl" \
  no-shared no-docs no-tests no-legacy no-comp no-zlib >configure.log 2>&1 \
  || { tail -20 configure.log >&2; exit 1; }
make -j"$(nproc)" build_programs >make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
make install_sw >>make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
echo "$want" >"$stamp"
cd "$root"
rm -rf "$build"
"$prefix/bin/openssl" version >&2
[ "${1:-}" = "--path" ] && echo "$prefix/bin/openssl"
exit 0
