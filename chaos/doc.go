// Package chaos is the chaos suite of issue 17: Go tests that build the llmcloud binary and
// drive real processes over real sockets under hostile conditions (killed and frozen replicas,
// idle and slow clients, absurd model files, corrupt checkpoints, NaN losses, disconnecting
// clients). They run only with LLMCLOUD_CHAOS=1 or -chaos; see docs/reliability.md.
package chaos
