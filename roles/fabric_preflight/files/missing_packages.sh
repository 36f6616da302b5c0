# Print each package name given as an argument that is not installed, one per line.
# Shared by the roles that install packages (they run the package manager only when
# this prints something): dpkg-query on Debian/Ubuntu, rpm on RHEL-likes; with
# neither, or for a name with a version in it, every name is printed and the package
# module decides.
for p; do
  if command -v dpkg-query >/dev/null 2>&1; then
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || echo "$p"
  elif command -v rpm >/dev/null 2>&1; then
    rpm -q --whatprovides "$p" >/dev/null 2>&1 || echo "$p"
  else
    echo "$p"
  fi
done
