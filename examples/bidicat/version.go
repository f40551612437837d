package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version returns the line -version prints: the module version bidicat
// was built from ("(devel)" in a checkout, v1.2.3 after go install
// …@v1.2.3), the VCS revision when the build recorded one, and the Go
// toolchain.
func version() string {
	v, rev := "(unknown)", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
				if len(rev) > 12 {
					rev = rev[:12]
				}
			case "vcs.modified":
				if s.Value == "true" && rev != "" {
					rev += "+dirty"
				}
			}
		}
	}
	if rev != "" {
		v += " (" + rev + ")"
	}
	return fmt.Sprintf("bidicat %s %s %s/%s", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
