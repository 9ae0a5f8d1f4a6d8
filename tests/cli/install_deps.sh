#!/bin/sh
# tests/cli/install_deps.sh WORKDIR: scripts/install-deps.sh works as root without sudo and as a
# user with sudo (the README's first command runs it as it is), and says what to do as a user
# without sudo. `id`, `sudo` and `apt-get` are stand-ins that record their calls: nothing is
# installed.
set -u
script=$(cd "$(dirname "$0")/../../scripts" && pwd)/install-deps.sh
work=$1
fail() { echo "FAIL: $*"; exit 1; }
bash=$(command -v bash) || fail "no bash"
rm -rf "$work" && mkdir -p "$work/bin" || fail "cannot create $work"
cd "$work" || exit 1
cat > bin/apt-get << 'STUB'
#!/bin/sh
echo "apt-get $1" >> "$CALLS"
STUB
cat > bin/sudo << 'STUB'
#!/bin/sh
echo "sudo" >> "$CALLS"
exec "$@"
STUB
cat > bin/id << 'STUB'
#!/bin/sh
echo "$FAKE_UID"
STUB
chmod +x bin/apt-get bin/sudo bin/id

# As root, with no sudo on the PATH: apt-get directly.
rm -f calls.txt
mkdir -p root_bin && cp bin/apt-get bin/id root_bin/
CALLS=$work/calls.txt FAKE_UID=0 PATH=$work/root_bin "$bash" "$script" > out.txt 2>&1 || fail "as root without sudo: $(cat out.txt)"
[ "$(cat calls.txt)" = "$(printf 'apt-get update\napt-get install')" ] || fail "as root: $(cat calls.txt)"
echo "as root without sudo: apt-get update and install"

# As a user with sudo: through sudo.
rm -f calls.txt
CALLS=$work/calls.txt FAKE_UID=1000 PATH=$work/bin "$bash" "$script" > out.txt 2>&1 || fail "as a user with sudo: $(cat out.txt)"
[ "$(cat calls.txt)" = "$(printf 'sudo\napt-get update\nsudo\napt-get install')" ] || fail "as a user: $(cat calls.txt)"
echo "as a user with sudo: sudo apt-get update and install"

# As a user without sudo: one line saying what to do, exit 1, nothing run.
rm -f calls.txt
CALLS=$work/calls.txt FAKE_UID=1000 PATH=$work/root_bin "$bash" "$script" > out.txt 2> err.txt
code=$?
[ "$code" -eq 1 ] || fail "as a user without sudo: exit $code, expected 1"
[ "$(wc -l < err.txt)" -eq 1 ] && grep -q "needs root: run this as root, or install sudo" err.txt || fail "as a user without sudo: $(cat err.txt)"
[ ! -e calls.txt ] || fail "as a user without sudo, apt-get ran: $(cat calls.txt)"
echo "as a user without sudo: $(cat err.txt)"
