#!/usr/bin/env bash
# An arm64 Python 3.13 to run the built Lambda layer under qemu-user, without root, chroot or binfmt:
# Debian trixie's arm64 packages (its python3.13 is the runtime's version), downloaded with a private apt
# configuration and unpacked with dpkg -x into one folder. Usage: fetch-python.sh ROOT
set -euo pipefail
root=${1:?usage: fetch-python.sh ROOT}
# The list of packages below, so that a cached root is fetched again when it changes.
manifest="python3.13 libstdc++6 for NumPy"
[ -x "$root/usr/bin/python3.13" ] && [ "$(cat "$root/.fetched" 2>/dev/null)" = "$manifest" ] && exit 0
command -v apt-get >/dev/null && command -v dpkg >/dev/null || { echo "needs apt-get and dpkg (Debian)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/state/lists/partial" "$work/cache/archives/partial" "$work/etc/preferences.d" "$work/debs"
touch "$work/status"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
echo "deb [signed-by=$keyring] http://deb.debian.org/debian trixie main" > "$work/sources.list"
cat > "$work/apt.conf" <<CONF
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Sandbox::User "$(id -un)";
Dir::State "$work/state";
Dir::State::status "$work/status";
Dir::Cache "$work/cache";
Dir::Etc::SourceList "$work/sources.list";
Dir::Etc::SourceParts "/nonexistent";
Dir::Etc::Preferences "$work/etc/preferences";
Dir::Etc::PreferencesParts "$work/etc/preferences.d";
CONF
export APT_CONFIG="$work/apt.conf"
apt-get -q update >/dev/null
packages=(python3.13-minimal libpython3.13-minimal libpython3.13-stdlib libc6 libexpat1 zlib1g libssl3t64
          libffi8 libmpdec4 libbz2-1.0 liblzma5 libzstd1 libstdc++6 libgcc-s1)  # the last two: NumPy's
(cd "$work/debs" && apt-get -q download "${packages[@]/%/:arm64}" >/dev/null)
mkdir -p "$root.partial"
for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$root.partial"; done
ln -sfn usr/lib "$root.partial/lib"
ln -sfn usr/bin "$root.partial/bin"
echo "$manifest" > "$root.partial/.fetched"
rm -rf "$root" && mv "$root.partial" "$root"
echo "arm64 Python 3.13 in $root"
