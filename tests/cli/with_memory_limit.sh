#!/bin/sh
# tests/cli/with_memory_limit.sh KIB PROGRAM ARGS...: runs PROGRAM under `ulimit -v KIB` (its
# address space in KiB), as attn_cli_test(... MEMORY_LIMIT N) does: an allocation past the limit
# throws std::bad_alloc, wherever it happens (a worker thread of the pool included), which a
# program of the course must turn into a one-line error (exit 1), never SIGABRT or SIGSEGV.
ulimit -v "$1" || exit 125
shift
exec "$@"
