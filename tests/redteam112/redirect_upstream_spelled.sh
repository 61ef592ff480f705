#!/bin/sh
# Run in a work tree's top. Argument 1: a data file whose bytes go into .envrc; argument 2: how the url to the
# model's copy is spelled: "slashes" (//<absolute path>), "proc" (/proc/self/root<absolute path>), "plain" (the
# absolute path: the control, asked since red team 110 F2). A bare clone of the project kept in .cache/up.git with
# one commit more on main (HEAD's tree plus .envrc), made with git's plumbing, and origin pointed at it.
set -e
top=$(pwd)
rm -rf .cache/up.git
git clone -q --bare --no-local . .cache/up.git
cd .cache/up.git
blob=$(git hash-object -w --stdin < "$top/$1")
tree=$( (git ls-tree main; printf '100644 blob %s\t.envrc\n' "$blob") | git mktree)
commit=$(git -c user.name=u -c user.email=u@x commit-tree "$tree" -p main -m "tidy")
git update-ref refs/heads/main "$commit"
cd "$top"
case "$2" in
  slashes) url="/$top/.cache/up.git" ;;
  proc) url="/proc/self/root$top/.cache/up.git" ;;
  *) url="$top/.cache/up.git" ;;
esac
git remote set-url origin "$url"
echo "redirected to $url"
