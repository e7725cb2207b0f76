// The autoscaler in the simulation: package autoscale's Autoscaler (a pure state machine) is
// evaluated every AutoscaleInterval on the ready replicas' load (running, waiting, KV usage),
// as `up --autoscale` does with the router's scrapes. A scale-up starts replicas that become
// routable StartDelay later; a scale-down stops routing to the highest-numbered replicas at
// once (they finish what they hold, as a drained replica does).

package sim

import (
	"fmt"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
)

// ScaleEvent is one change the autoscaler made.
type ScaleEvent struct {
	At            int64 // ns
	Before, After int
	Reason        string
}

func (sh *shard) startAutoscale() error {
	c := *sh.o.Autoscale
	a, err := autoscale.New(c, time.Unix(0, 0))
	if err != nil {
		return err
	}
	sh.scaler = a
	sh.ready = min(max(sh.ready, c.MinReplicas), c.MaxReplicas)
	sh.target = sh.ready
	sh.readyAt = make([]int64, len(sh.reps))
	if sh.o.AutoscaleInterval <= 0 {
		return fmt.Errorf("sim: autoscale interval %v: want > 0", sh.o.AutoscaleInterval)
	}
	sh.nextEval = int64(sh.o.AutoscaleInterval)
	return nil
}

// autoscale runs the evaluations due by time t and brings started replicas into the router.
func (sh *shard) autoscale(t int64) {
	for sh.nextEval <= t {
		sh.becomeReady(sh.nextEval)
		now := sh.nextEval
		samples := make([]autoscale.Sample, sh.ready)
		for k := range samples {
			s := sh.reps[k].sched
			samples[k] = autoscale.Sample{Replica: sh.cands[k].URL, Running: float64(s.NumRunning()), Waiting: float64(s.NumWaiting()), KVUsage: s.KVUsage()}
		}
		d := sh.scaler.Evaluate(time.Unix(0, now), sh.target, samples)
		if d.After != sh.target {
			sh.out.Scaling = append(sh.out.Scaling, ScaleEvent{At: now, Before: sh.target, After: d.After, Reason: d.Reason})
			if d.After > sh.target {
				for k := sh.target; k < d.After; k++ {
					sh.readyAt[k] = now + int64(sh.o.StartDelay)
				}
			} else {
				for k := d.After; k < sh.ready; k++ {
					sh.policy.Forget(sh.cands[k].URL)
				}
				sh.ready = min(sh.ready, d.After)
			}
			sh.target = d.After
		}
		sh.nextEval += int64(sh.o.AutoscaleInterval)
	}
	sh.becomeReady(t)
}

// becomeReady makes the started replicas whose start delay has passed by t routable.
func (sh *shard) becomeReady(t int64) {
	for sh.ready < sh.target && sh.readyAt[sh.ready] <= t {
		sh.ready++
	}
}
