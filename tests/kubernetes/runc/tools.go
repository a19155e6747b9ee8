//go:build tools

// The command this module builds (go build github.com/opencontainers/runc).
package tools

import _ "github.com/opencontainers/runc"
