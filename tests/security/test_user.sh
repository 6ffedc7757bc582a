# Sourced by the security scripts (POSIX sh; the caller defines skip() first): a real
# unprivileged user whose home is a fresh folder in a new temp folder. At exit the processes
# listed in $kill_at_exit are killed, the user is removed and so is the temp folder.
# new_test_user PREFIX sets tmp (0755), user (PREFIX and the script's pid), home (the user's,
# $tmp/home), uid and gid. as_user CMD... runs CMD as the user with PATH as its environment.
kill_at_exit=
test_user_cleanup() {
  for p in $kill_at_exit; do kill "$p" 2>/dev/null || true; done
  userdel "$user" 2>/dev/null || true
  rm -rf "$tmp"
}
new_test_user() {
  tmp=$(mktemp -d)
  chmod 0755 "$tmp"
  user=$1$$
  trap test_user_cleanup EXIT
  home=$tmp/home
  useradd -M -d "$home" -s /bin/sh "$user" || skip "useradd $user failed"
  mkdir "$home" && chown "$user:" "$home"
  uid=$(id -u "$user") gid=$(id -g "$user")
}
as_user() { setpriv --reuid "$uid" --regid "$gid" --clear-groups env -i PATH=/usr/bin:/bin "$@"; }
