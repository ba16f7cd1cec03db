# ports.sh: loopback ports for the shell tests and bench scripts (source it).
#
# A port learned by binding port 0 comes from the kernel's ephemeral range
# (32768-60999 on Debian), where an outgoing connection of any other process can
# take it before our child binds it; the test then talks to a stranger. So
# ports come from 10000-19999, below that range and apart from the node tests'
# band (lib.mjs: 20000-31999). Each candidate must bind at the time it is
# handed out, and one script never gets the same port twice: freeport runs in
# $(...) subshells, so the ports given are kept in a file named after the
# script's PID ($$ is the same in its subshells), removed when that PID is gone.
_ir_ports_file="${TMPDIR:-/tmp}/ir-ports.$$"
for _f in "${TMPDIR:-/tmp}"/ir-ports.*; do
  [ -e "$_f" ] || continue
  kill -0 "${_f##*.}" 2>/dev/null || rm -f "$_f"
done
unset _f
: >>"$_ir_ports_file"

freeport() {
  local p i
  for i in $(seq 500); do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % 10000))
    grep -qx "$p" "$_ir_ports_file" && continue
    if python3 -c 'import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", int(sys.argv[1])))' "$p" 2>/dev/null; then
      echo "$p" >>"$_ir_ports_file"
      echo "$p"
      return 0
    fi
  done
  echo "ports.sh: no free port in 10000-19999 after $i tries" >&2
  return 1
}
