#!/bin/sh
# tests/cli/with_file_size_limit.sh BLOCKS PROGRAM ARGS...: runs PROGRAM under `ulimit -f BLOCKS`
# (blocks of 512 bytes in dash, 1024 in bash), as attn_cli_test(... FILE_SIZE_LIMIT N) does: a
# write past the limit raises SIGXFSZ, which a program of the course must turn into a one-line
# write error (exit 1), never a silent death (exit 153).
ulimit -f "$1" || exit 125
shift
exec "$@"
