//go:build tools

// Package tools pins the commands the Kubernetes tests build with `go build`: the
// apiserver and kubectl for the admission test, and the rest of a single-node
// cluster (tests/kubernetes/cluster) for the pods that run.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
