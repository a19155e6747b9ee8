//go:build tools

// Package tools pins the container runtime of the single-node cluster
// (tests/kubernetes/cluster): containerd v2 (image volumes need 2.1 or later),
// its runc shim and its ctr client, built with `go build`.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/containerd/containerd/v2/cmd/ctr"
)
