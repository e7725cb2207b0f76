// Timings over HTTP: a scripted server in another process reports what it recorded, so a test
// can compare the client's measurements with the server's truth across the process boundary.
//
// GET /debug/timings answers a JSON object keyed by X-Request-Id:
//
//	{"bench-0": {"received_unix_ns": 1764480000123456789, "writes_ns": [51234, 10051234]}, ...}
//
// received_unix_ns is the wall-clock time the handler was entered; writes_ns are the offsets in
// nanoseconds from then to the end of each content chunk's flush, taken on the server's
// monotonic clock, so durations on the server side are exact whatever the two clocks do.

package benchtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// TimingsPath is where a Server answers its recorded timings.
const TimingsPath = "/debug/timings"

// wireTiming is one request's Timing on the wire.
type wireTiming struct {
	ReceivedUnixNS int64   `json:"received_unix_ns"`
	WritesNS       []int64 `json:"writes_ns"`
}

func (s *Server) serveTimings(w http.ResponseWriter) {
	s.mu.Lock()
	out := make(map[string]wireTiming, len(s.timings))
	for id, t := range s.timings {
		wt := wireTiming{ReceivedUnixNS: t.Received.UnixNano(), WritesNS: make([]int64, len(t.Writes))}
		for i, wr := range t.Writes {
			wt.WritesNS[i] = int64(wr.Sub(t.Received))
		}
		out[id] = wt
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// FetchTimings reads the timings recorded by the server at baseURL (one started with record on).
// Received carries the server's wall clock; Writes[i].Sub(Received) is the server's own
// monotonic duration.
func FetchTimings(baseURL string) (map[string]Timing, error) {
	resp, err := http.Get(baseURL + TimingsPath)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", TimingsPath, resp.StatusCode)
	}
	var in map[string]wireTiming
	if err := json.NewDecoder(resp.Body).Decode(&in); err != nil {
		return nil, fmt.Errorf("GET %s: %v", TimingsPath, err)
	}
	out := make(map[string]Timing, len(in))
	for id, wt := range in {
		t := Timing{Received: time.Unix(0, wt.ReceivedUnixNS), Writes: make([]time.Time, len(wt.WritesNS))}
		for i, d := range wt.WritesNS {
			t.Writes[i] = t.Received.Add(time.Duration(d))
		}
		out[id] = t
	}
	return out, nil
}
