# shellcheck shell=sh
# What a host_config task would look at, in one shell command (a module task costs a
# Python start on the host; plugins/module_utils/hostconfig/quickcheck.py says why and
# judges the lines). Arguments, each KIND:NAME:
#   f:PATH  d:PATH  a:PATH   a file (hashed), a directory, a path that should be absent
#   m:NAME                   a kernel module
#   u:NAME                   a systemd unit
#   r:PATH                   a file to read back
# Lines (the path or name last, so blanks in it survive):
#   p MODE OWNER GROUP TYPE SHA256|- PATH     or  p - PATH   when nothing is there
#   m loaded|- NAME
#   l NAME                   each module named in /etc/modules-load.d/*.conf
#   u ENABLEMENT ACTIVITY NAME                (systemctl is-enabled, is-active; - when silent)
#   r BASE64|- PATH
for a; do
  kind=${a%%:*}; name=${a#*:}
  case $kind in
    f|d|a)
      if [ -L "$name" ]; then t=other
      elif [ -d "$name" ]; then t=directory
      elif [ -f "$name" ]; then t=file
      elif [ -e "$name" ]; then t=other
      else echo "p - $name"; continue; fi
      sum=-
      if [ "$kind" = f ] && [ "$t" = file ]; then sum=$(sha256sum <"$name" | cut -d' ' -f1); fi
      echo "p $(stat -c '%a %U %G' "$name") $t $sum $name" ;;
    m)
      if [ -d "/sys/module/$(printf '%s' "$name" | tr - _)" ]; then echo "m loaded $name"; else echo "m - $name"; fi ;;
    u)
      e=$(systemctl is-enabled "$name" 2>/dev/null); s=$(systemctl is-active "$name" 2>/dev/null)
      echo "u ${e:--} ${s:--} $name" ;;
    r)
      if [ -f "$name" ]; then echo "r $(base64 -w0 <"$name") $name"; else echo "r - $name"; fi ;;
  esac
done
for f in /etc/modules-load.d/*.conf; do
  [ -f "$f" ] && sed -n 's/^[[:space:]]*\([A-Za-z0-9_-][A-Za-z0-9_-]*\)[[:space:]]*$/l \1/p' "$f"
done
true
