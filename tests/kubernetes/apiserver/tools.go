//go:build tools

// Package tools pins the two commands the admission test builds with `go build`.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
