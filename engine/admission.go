// Admission: how many requests Add accepts. MaxQueuedRequests bounds only the requests that
// must wait; an arrival takes a free run slot (of Scheduler.MaxNumSeqs) at once, even before
// the step loop has seen it, so a burst into an idle engine is not refused while slots are free.

package engine

// freeSlots counts the run slots no started request holds (e.mu held). A started request
// holds its slot until it finishes, even while preempted (it resumes before newer ones).
func (e *Engine) freeSlots() int {
	started := len(e.live) - e.notStart
	return max(0, e.cfg.MaxNumSeqs-started)
}

// queueFull reports whether one more request would have to wait beyond MaxQueuedRequests
// (e.mu held): the notStart requests fill the free run slots first, the rest wait.
func (e *Engine) queueFull() bool {
	return e.opts.MaxQueuedRequests > 0 && e.notStart >= e.opts.MaxQueuedRequests+e.freeSlots()
}
