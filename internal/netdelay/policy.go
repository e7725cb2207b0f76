package netdelay

import (
	"os"
	"os/exec"
	"testing"
)

// NamespacePolicy decides whether a test across network namespaces runs: it needs root and ip
// (iproute2), else it is skipped saying which is missing. LLMCLOUD_REQUIRE_NETNS=1 makes a
// missing prerequisite a failure instead (for CI jobs that run as root). strict reports that a
// namespace that cannot be made (a container without CAP_SYS_ADMIN) must fail the test rather
// than skip it: under CI=true, or with LLMCLOUD_REQUIRE_NETNS=1.
func NamespacePolicy(t testing.TB) (strict bool) {
	t.Helper()
	require := os.Getenv("LLMCLOUD_REQUIRE_NETNS") == "1"
	skip := t.Skipf
	if require {
		skip = t.Fatalf
	}
	if os.Geteuid() != 0 {
		skip("network namespaces need root (LLMCLOUD_REQUIRE_NETNS=1 makes this a failure)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		skip("network namespaces need ip (iproute2): %v", err)
	}
	return require || os.Getenv("CI") == "true"
}
