#!/usr/bin/env bash
# bench/page_held.sh: the job page against held sockets (issue 32), the
# measurement behind the choice of server in docs/status-page.md
# ("Limits").  Builds bench/page_held.c with cc, then holds 8 sockets from
# the token holder's own address (127.0.0.1) and 64 from eight addresses,
# each sending a byte of a request head a second, against
#   1. orion-driver --status (a script that waits 20 s), and
#   2. GNU libmicrohttpd with 64 connections, 8 per address and a 2 s
#      timeout, when pkg-config finds it (Debian: libmicrohttpd-dev),
# printing each second whether the holder's request got 200.
#
#   ./configure && make && bench/page_held.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'kill "${pid:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
if pkg-config --exists libmicrohttpd 2>/dev/null; then
  cc -O1 -DWITH_MHD -o "$tmp/page_held" bench/page_held.c \
    $(pkg-config --cflags --libs libmicrohttpd)
else
  cc -O1 -o "$tmp/page_held" bench/page_held.c
fi
printf 'local t = os.time()\nwhile os.time() - t < 20 do end\n' >"$tmp/wait.lua"
./orion-driver --executors 0 --status 0 "$tmp/wait.lua" 2>"$tmp/err" &
pid=$!
for _ in $(seq 100); do
  grep -q 'status page at' "$tmp/err" && break
  sleep 0.1
done
url=$(sed -n 's/^orion: status page at //p' "$tmp/err")
page_port=${url#http://127.0.0.1:}
page_port=${page_port%%/*}
token=${url##*token=}
for shape in "1 8" "8 8"; do
  # shellcheck disable=SC2086
  "$tmp/page_held" "$page_port" "$token" $shape
done
if pkg-config --exists libmicrohttpd 2>/dev/null; then
  for shape in "1 8" "8 8"; do
    # shellcheck disable=SC2086
    "$tmp/page_held" mhd $shape
  done
else
  echo "no libmicrohttpd (Debian: libmicrohttpd-dev): its half is skipped"
fi
