// Prints a container runtime's default seccomp profile as JSON, for podman's
// --security-opt seccomp=FILE (tests/bats/containers.bats): Docker's, from
// the module Docker Engine takes it from, or containerd's, for the spec
// containerd gives a container by default (its capabilities decide a few
// rules). Made at test time from the modules, never copied into the tree.
//
//	seccomp-profiles docker|containerd
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	ctrseccomp "github.com/containerd/containerd/v2/contrib/seccomp"
	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	mobyseccomp "github.com/moby/profiles/seccomp"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: seccomp-profiles docker|containerd")
		os.Exit(2)
	}
	var profile any
	switch os.Args[1] {
	case "docker":
		profile = mobyseccomp.DefaultProfile()
	case "containerd":
		ctx := namespaces.WithNamespace(context.Background(), "default")
		spec, err := oci.GenerateSpec(ctx, nil, &containers.Container{ID: "epollfix"})
		if err != nil {
			fmt.Fprintln(os.Stderr, "seccomp-profiles: containerd's default spec:", err)
			os.Exit(1)
		}
		profile = ctrseccomp.DefaultProfile(spec)
	default:
		fmt.Fprintln(os.Stderr, "usage: seccomp-profiles docker|containerd")
		os.Exit(2)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", "  ")
	if err := out.Encode(profile); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp-profiles:", err)
		os.Exit(1)
	}
}
