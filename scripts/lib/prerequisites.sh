#!/usr/bin/env bash
# Installs what UnlockIT needs from Debian when it is missing: the mosquitto broker (with its
# dynamic-security plugin and mosquitto_ctrl), libmosquitto's headers, OpenSSL's and SQLite's headers,
# util-linux's setpriv (the processes the tests and the benchmark start end with them), curl (the
# local site's health check), and the openssl command (the tests make the TLS broker's certificates). Sourced by scripts/demo, scripts/test (which .ci/run runs),
# scripts/bench and the fuzz scripts.
set -euo pipefail

# Extra Debian packages a script needs besides these are given as arguments.
unlockit_prerequisites() {
    local wanted=(mosquitto libmosquitto-dev libssl-dev libsqlite3-dev pkg-config curl ca-certificates openssl "$@")
    local missing=()
    for package in "${wanted[@]}"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    # setpriv is part of util-linux, or a package of its own in newer releases.
    if ! command -v setpriv >/dev/null; then
        if apt-cache show setpriv >/dev/null 2>&1; then missing+=(setpriv); else missing+=(util-linux); fi
    fi
    if ((${#missing[@]} > 0)); then
        echo "Installing ${missing[*]} ..."
        local sudo=()
        if [[ $(id -u) -ne 0 ]]; then
            if command -v sudo >/dev/null; then sudo=(sudo); else
                echo "Please install: ${missing[*]} (apt-get install ${missing[*]}), then run this again." >&2
                return 1
            fi
        fi
        # A machine that has just booted may have apt busy (unattended upgrades): wait for it rather
        # than fail. The variable goes through env, since sudo drops the caller's environment.
        local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)
        "${apt[@]}" update -qq
        "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    if ! command -v swift >/dev/null; then
        if [[ -x /opt/swift/usr/bin/swift ]]; then export PATH="/opt/swift/usr/bin:$PATH"; else
            echo "Swift 6.2 or later is needed (https://www.swift.org/install/linux/)." >&2
            return 1
        fi
    fi
    # Package.swift's tools version: an older Swift would stop at it with a message about manifests.
    local version
    version=$(swift --version 2>/dev/null | sed -n 's/.*Swift version \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -n 1)
    if [[ -n $version ]]; then
        read -r major minor <<<"$version"
        if ((major < 6 || (major == 6 && minor < 2))); then
            echo "Swift 6.2 or later is needed; this is Swift $major.$minor (https://www.swift.org/install/linux/)." >&2
            return 1
        fi
    fi
    # Debian keeps mosquitto in sbin, which is not on every user's PATH.
    export PATH="$PATH:/usr/sbin:/sbin"
}
