#!/usr/bin/env bash
# Makes sure the system packages the tests need are present: Chromium (it brings SwiftShader, the
# WebGPU implementation on the CPU used by the browser tests and by dawn.node) and the Vulkan loader.
# Installs them with apt when running as root; otherwise says what to install.
set -euo pipefail
packages=()
if [ -z "${CHROMIUM_PATH:-}" ] && ! command -v chromium >/dev/null 2>&1; then packages+=(chromium); fi
if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1 '; then packages+=(libvulkan1); fi
[ "${#packages[@]}" -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing ${packages[*]} (needed by the WebGPU tests)…" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${packages[@]}" >/dev/null
else
  echo "The tests need: ${packages[*]}. Install them (e.g. sudo apt-get install ${packages[*]})," >&2
  echo "or point CHROMIUM_PATH at a Chromium and VK_ICD_FILENAMES at its vk_swiftshader_icd.json." >&2
  exit 1
fi
