// Command netdelay adds latency to a link where the kernel has no netem qdisc, and measures
// links (package internal/netdelay). scripts/tp-netns.sh uses it.
//
//	netdelay bridge -a IF -b IF -delay 1ms   forward frames between two interfaces after the delay
//	netdelay echo -listen ADDR               serve probes
//	netdelay probe -addr ADDR                round trips of 2 KiB and 64 KiB messages, bandwidth
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/internal/netdelay"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "netdelay:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: netdelay bridge|echo|probe [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "bridge":
		a := fs.String("a", "", "one interface")
		b := fs.String("b", "", "the other interface")
		delay := fs.Duration("delay", time.Millisecond, "latency added to every frame, each way")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *a == "" || *b == "" {
			return fmt.Errorf("bridge: -a and -b name the interfaces")
		}
		br, err := netdelay.Open(*a, *b, *delay)
		if err != nil {
			return err
		}
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		go func() { <-sig; br.Close() }()
		slog.Info("bridging", "a", *a, "b", *b, "delay", *delay)
		err = br.Run()
		ab, ba := br.Frames()
		slog.Info("bridge stopped", "frames_a_to_b", ab, "frames_b_to_a", ba)
		return err
	case "echo":
		listen := fs.String("listen", ":9555", "address to serve probes on")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		return netdelay.Echo(ln)
	case "probe":
		addr := fs.String("addr", "", "an echo server's HOST:PORT")
		n := fs.Int("n", 200, "round trips per size")
		paced := fs.Duration("paced", 0, "instead: round trips of -size bytes, one every -gap, for this long (the link while other work runs)")
		size := fs.Int("size", 2048, "-paced: message size in bytes")
		gap := fs.Duration("gap", 5*time.Millisecond, "-paced: pause between round trips")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		if *paced > 0 {
			d, k, err := netdelay.PacedRoundTrip(*addr, *size, *gap, *paced)
			if err != nil {
				return err
			}
			fmt.Printf("paced round trip %6d B: %8.3f ms (median of %d, one every %v)\n", *size, float64(d)/1e6, k, *gap)
			return nil
		}
		var rtt time.Duration
		for _, size := range []int{1, 2048, 64 << 10} {
			d, err := netdelay.RoundTrip(*addr, size, *n)
			if err != nil {
				return err
			}
			if size == 1 {
				rtt = d
			}
			fmt.Printf("round trip %6d B: %8.3f ms (median of %d)\n", size, float64(d)/1e6, *n)
		}
		bw, err := netdelay.Bandwidth(*addr, 256<<20, rtt)
		if err != nil {
			return err
		}
		fmt.Printf("bandwidth: %.0f MB/s\n", bw/1e6)
		return nil
	}
	return fmt.Errorf("unknown command %q (want bridge, echo or probe)", args[0])
}
