// The version command: the build's module version and VCS revision.
package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

func init() {
	register("version", "print the version and build information", runVersion)
}

// Version is set at link time (-ldflags "-X main.Version=...") for releases.
var Version = "0.1.0-dev"

func runVersion(args []string, stdout, stderr io.Writer) error {
	rev := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				rev = s.Value
			}
		}
	}
	fmt.Fprintf(stdout, "llmcloud %s (revision %s)\n", Version, rev)
	return nil
}
