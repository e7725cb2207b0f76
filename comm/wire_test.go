// Tests of the control wire format, the store (over a real TCP socket), the status encoding
// and the rendezvous environment; FuzzReadFrame fuzzes the frame parser.
package comm

import (
	"bytes"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, frame{typ: frameSet, key: "addr/3", val: []byte("127.0.0.1:4000")}))
	f.Add(appendFrame(nil, frame{typ: frameGet, key: "job"}))
	f.Add([]byte{'S', 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{'Z', 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		fr, err := readFrame(r)
		if err != nil {
			return
		}
		used := len(data) - r.Len()
		if got := appendFrame(nil, fr); !bytes.Equal(got, data[:used]) {
			t.Fatalf("re-encoding %q gives %q", data[:used], got)
		}
	})
}

func TestReadFrameRejects(t *testing.T) {
	for name, data := range map[string][]byte{
		"unknown type": {'Z', 0, 0, 0, 0, 0, 0, 0, 0},
		"huge key":     {'S', 0xff, 0xff, 0xff, 0x7f},
		"huge value":   append([]byte{'S', 0, 0, 0, 0}, 0xff, 0xff, 0xff, 0x7f),
		"short key":    {'S', 5, 0, 0, 0, 'a'},
	} {
		if _, err := readFrame(bytes.NewReader(data)); err == nil || err == io.EOF {
			t.Errorf("%s: err = %v, want a parse error", name, err)
		}
	}
}

func TestStore(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := newStoreServer(ln, slog.New(slog.DiscardHandler))
	defer srv.close()
	a, err := dialStore(ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	b, err := dialStore(ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()
	got := make(chan []byte)
	go func() { v, _ := b.get("k", 5*time.Second); got <- v }() // waits for the set
	time.Sleep(20 * time.Millisecond)
	if err := a.set("k", []byte("v1"), time.Second); err != nil {
		t.Fatal(err)
	}
	if v := <-got; string(v) != "v1" {
		t.Fatalf("get = %q, want v1", v)
	}
	for i, want := range []int64{3, 5} {
		n, err := a.add("ctr", []int64{3, 2}[i], time.Second)
		if err != nil || n != want {
			t.Fatalf("add = %d, %v; want %d", n, err, want)
		}
	}
	if _, err := a.get("missing", 100*time.Millisecond); err == nil {
		t.Fatal("get of a key never set did not time out")
	}
}

func TestStatusRoundTrip(t *testing.T) {
	s := status{seq: 42, op: "allreduce", desc: "float32[7] sum ring", startUnixNano: 123456789, state: stateFailed}
	got, err := decodeStatus(s.encode())
	if err != nil || got != s {
		t.Fatalf("decode(encode(%+v)) = %+v, %v", s, got, err)
	}
	if _, err := decodeStatus([]byte("1\tx")); err == nil {
		t.Fatal("a truncated status decoded")
	}
}

func TestEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want Env
		err  string
	}{
		{"torchrun", map[string]string{"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"},
			Env{Rank: 3, WorldSize: 4, LocalRank: 1, MasterAddr: "10.0.0.1", MasterPort: 29500}, ""},
		{"slurm", map[string]string{"SLURM_PROCID": "2", "SLURM_NTASKS": "8", "SLURM_LOCALID": "0", "MASTER_PORT": "1234"},
			Env{Rank: 2, WorldSize: 8, LocalRank: 0, MasterAddr: "127.0.0.1", MasterPort: 1234}, ""},
		{"k8s indexed job", map[string]string{"JOB_COMPLETION_INDEX": "5", "WORLD_SIZE": "6", "MASTER_ADDR": "job-0.svc", "MASTER_PORT": "29500"},
			Env{Rank: 5, WorldSize: 6, LocalRank: 5, MasterAddr: "job-0.svc", MasterPort: 29500}, ""},
		{"single", map[string]string{}, Env{WorldSize: 1, MasterAddr: "127.0.0.1"}, ""},
		{"rank too big", map[string]string{"RANK": "4", "WORLD_SIZE": "4", "MASTER_PORT": "1"}, Env{}, "out of range"},
		{"no port", map[string]string{"RANK": "0", "WORLD_SIZE": "2"}, Env{}, "MASTER_PORT"},
		{"garbage", map[string]string{"RANK": "x"}, Env{}, "not a non-negative integer"},
	} {
		got, err := envFrom(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestChooseAlgo(t *testing.T) {
	if a := chooseAlgo(AlgoAuto, 1024, 4); a != AlgoRHD {
		t.Errorf("1 KiB: %v, want rhd", a)
	}
	if a := chooseAlgo(AlgoAuto, 64<<20, 4); a != AlgoRing {
		t.Errorf("64 MiB: %v, want ring", a)
	}
	if a := chooseAlgo(AlgoTree, 64<<20, 4); a != AlgoTree {
		t.Errorf("forced tree: %v", a)
	}
}
