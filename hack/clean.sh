#!/usr/bin/env bash
# Removes build output and artifacts.
source "$(dirname "$0")/lib.sh"
rm -rf bin _artifacts
