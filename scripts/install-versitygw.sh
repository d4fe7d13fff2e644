#!/usr/bin/env bash
# Install the pinned versitygw (the S3 server the bcast tests and demo start on
# 127.0.0.1) with `go install`, unless that version is already there. Idempotent.
set -euo pipefail
VERSION="v1.8.0"
MODULE="github.com/versity/versitygw/cmd/versitygw"

if ! command -v go >/dev/null 2>&1; then
    echo "install-versitygw: go is not on PATH; the bcast S3 tests will be skipped" >&2
    exit 0
fi
bin_dir="$(go env GOBIN)"
[ -n "$bin_dir" ] || bin_dir="$(go env GOPATH | cut -d: -f1)/bin"
binary="$bin_dir/versitygw"

# `go version -m` reads the module version baked into the binary.
if [ -x "$binary" ] && go version -m "$binary" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+github.com/versity/versitygw[[:space:]]+$VERSION([[:space:]]|$)"; then
    echo "install-versitygw: $binary is already $VERSION"
    exit 0
fi
echo "install-versitygw: go install $MODULE@$VERSION"
go install "$MODULE@$VERSION"
echo "install-versitygw: installed $binary"
