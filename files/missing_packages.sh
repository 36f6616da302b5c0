# shellcheck shell=sh
# Print each package name given as an argument that is not installed, one per line.
# Shared by the roles that install packages (they run the package manager only when
# this prints something): dpkg-query on Debian/Ubuntu, rpm on RHEL-likes; with
# neither, or for a name with a version in it, every name is printed and the package
# module decides.
# dpkg-query is asked once for all the names (a process costs about 60 ms on the lab's
# emulated guests): "ii  NAME" per installed package; a name it does not know is left
# out of its output, so it counts as missing, as does any status but installed (ii with
# no error flag).
[ $# -gt 0 ] || exit 0
if command -v dpkg-query >/dev/null 2>&1; then
  nl='
'
  installed=$nl$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "$@" 2>/dev/null)$nl
  for p; do
    case $installed in
      *"${nl}ii  $p$nl"*) ;;
      *) echo "$p" ;;
    esac
  done
elif command -v rpm >/dev/null 2>&1; then
  for p; do rpm -q --whatprovides "$p" >/dev/null 2>&1 || echo "$p"; done
else
  for p; do echo "$p"; done
fi
