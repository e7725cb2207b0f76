// Package sim is llmcloud's capacity simulator: a discrete-event simulation of the router and
// its replicas in which each replica runs the engine's own Scheduler (package engine's pure
// state machine: Schedule returns a StepPlan, Update takes the sampled tokens) driven by
// simulated time. A step's duration comes from a Profile: a small linear model of the real
// engine's step time fitted to measurements (`llmcloud profile --engine`). Requests come from
// `bench serve`'s datasets and arrival process or from a trace file; routing uses package
// router's own policies; the result is a bench.Result, printed and saved as `bench serve`
// does. docs/simulate.md describes the model, its measurements and its limits.
package sim
