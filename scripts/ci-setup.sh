#!/usr/bin/env bash
# What the test suite needs beyond `npm install`, installed where missing, on Debian or Ubuntu:
# redis-server, bubblewrap (sandboxes), Chromium (the GUI track), kubectl (renders k8s/),
# iproute2 (the multi-host test), procps and git, and Mesa's lavapipe (the WebGPU provider on
# a software Vulkan driver). Run by `npm run test:ci` and `.ci/run`; does nothing where all of
# it is there. apt runs as root, through sudo when this script is not root.
set -uo pipefail
cd "$(dirname "$0")/.."

fail() {
  echo "ci-setup: $*" >&2
  exit 1
}

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null 2>&1 || fail "not root and no sudo to install packages with: run it as root"
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
distro="$( (. /etc/os-release && echo "${ID:-}") 2>/dev/null || true)"
codename="$( (. /etc/os-release && echo "${VERSION_CODENAME:-}") 2>/dev/null || true)"
command -v apt-get >/dev/null 2>&1 || fail "no apt-get: this script sets up Debian or Ubuntu only"

apt_updated=0
apt_update() {
  if ((apt_updated == 0)); then
    "${sudo[@]}" apt-get update -qq || return 1
    apt_updated=1
  fi
}

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v pgrep >/dev/null 2>&1 || missing+=(procps)
command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
# Debian packages Chromium; Ubuntu's `chromium` is a snap, which does not run in containers (below).
if ! command -v chromium >/dev/null 2>&1 && [[ $distro != ubuntu ]]; then missing+=(chromium); fi
if ((${#missing[@]} > 0)); then
  echo "installing: ${missing[*]}"
  { apt_update && "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null; } ||
    fail "could not install ${missing[*]}"
fi

# Ubuntu: Playwright's build of Chromium (the playwright-core this clone installed), at
# /usr/bin/chromium where the GUI track looks, as the GPU image does.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing: chromium (Playwright's build)"
  [[ -f node_modules/playwright-core/cli.js ]] || fail "run npm install (or npm ci) first: Chromium comes from playwright-core here"
  { "${sudo[@]}" env PLAYWRIGHT_BROWSERS_PATH=/opt/ms-playwright \
    "$(command -v node)" node_modules/playwright-core/cli.js install --with-deps --no-shell chromium >/dev/null &&
    "${sudo[@]}" ln -sf "$(find /opt/ms-playwright -path '*/chromium-*' -type f -name chrome | head -n 1)" \
      /usr/bin/chromium && chromium --version >/dev/null; } || fail "could not install chromium"
fi

# A package of another Debian release, downloaded with a package list of its own in a private
# folder (the machine's apt sources stay as they are), then installed with its dependencies.
# $1: the apt source line; the rest: package/release names to download.
install_from() {
  local source="$1"
  shift
  local dir
  dir="$(mktemp -d)"
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  echo "$source" >"$dir/sources.list"
  local opts=(-o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts="$dir/none"
    -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache")
  { apt_update && apt-get "${opts[@]}" update -qq &&
    (cd "$dir" && apt-get "${opts[@]}" download "$@") &&
    "${sudo[@]}" apt-get install -y -qq "$dir"/*.deb >/dev/null; }
  local status=$?
  rm -rf "$dir"
  return $status
}

# kubectl renders k8s/ in the tests (kubectl kustomize). Debian 12's own (kubernetes-client
# 1.20) predates the kustomize features k8s/ uses, and Ubuntu has it only as a snap; Debian 13's
# kubectl package (1.32, needing only libc6 >= 2.34) installs cleanly on both.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "installing: kubectl (from Debian 13)"
  install_from "deb http://deb.debian.org/debian trixie main" kubectl/trixie ||
    fail "could not install kubectl"
fi

# Mesa's lavapipe, a software Vulkan driver, lets the tests run onnxruntime's WebGPU execution
# provider (Dawn over Vulkan) without a GPU. Dawn needs Mesa 25: Debian 12's own (22.3) is too
# old, bookworm-backports' (25.0) works. Elsewhere the release's own is taken; where it is older
# the WebGPU tests skip with a warning.
mesa_version() { dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || echo 0; }
if ! dpkg --compare-versions "$(mesa_version)" ge 25; then
  if [[ $distro == debian && $codename == bookworm ]]; then
    echo "installing: mesa-vulkan-drivers (lavapipe, from bookworm-backports)"
    install_from "deb http://deb.debian.org/debian bookworm-backports main" \
      mesa-vulkan-drivers/bookworm-backports libdrm2/bookworm-backports \
      libdrm-common/bookworm-backports libdrm-amdgpu1/bookworm-backports ||
      fail "could not install mesa-vulkan-drivers"
  else
    echo "installing: mesa-vulkan-drivers (lavapipe)"
    { apt_update && "${sudo[@]}" apt-get install -y -qq mesa-vulkan-drivers >/dev/null; } ||
      fail "could not install mesa-vulkan-drivers"
    dpkg --compare-versions "$(mesa_version)" ge 25 ||
      echo "ci-setup: warning: Mesa $(mesa_version) is older than 25; the WebGPU provider's tests will be skipped" >&2
  fi
fi
echo "ci-setup: the tests' system packages are in place"
