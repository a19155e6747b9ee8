//go:build tools

// Package tools pins crictl, the CRI client the single-node cluster
// (tests/kubernetes/cluster) is inspected with, built with `go build`.
package tools

import _ "sigs.k8s.io/cri-tools/cmd/crictl"
