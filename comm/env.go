// Rendezvous environment: where this process sits in the job, read from torchrun's variables
// (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK), or Slurm's (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID), or a Kubernetes Indexed Job's JOB_COMPLETION_INDEX.
package comm

import (
	"fmt"
	"os"
	"strconv"
)

// Env is one process's place in the job.
type Env struct {
	Rank       int
	WorldSize  int
	LocalRank  int
	MasterAddr string // host of rank 0's store
	MasterPort int    // port of rank 0's store
}

// EnvFromOS reads the environment. RANK/WORLD_SIZE win over SLURM_PROCID/SLURM_NTASKS, which
// win over JOB_COMPLETION_INDEX (then WORLD_SIZE must be set). MASTER_ADDR defaults to
// 127.0.0.1; MASTER_PORT is required when WORLD_SIZE > 1.
func EnvFromOS() (Env, error) { return envFrom(os.LookupEnv) }

// HasEnv reports whether a launcher has set a rank for this process.
func HasEnv() bool {
	for _, k := range []string{"RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX"} {
		if _, ok := os.LookupEnv(k); ok {
			return true
		}
	}
	return false
}

func envFrom(look func(string) (string, bool)) (Env, error) {
	e := Env{MasterAddr: "127.0.0.1", WorldSize: 1}
	num := func(key string) (int, bool, error) {
		s, ok := look(key)
		if !ok || s == "" {
			return 0, false, nil
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			return 0, true, fmt.Errorf("comm: %s=%q is not a non-negative integer", key, s)
		}
		return v, true, nil
	}
	pick := func(dst *int, keys ...string) error {
		for _, k := range keys {
			v, ok, err := num(k)
			if err != nil {
				return err
			}
			if ok {
				*dst = v
				return nil
			}
		}
		return nil
	}
	if err := pick(&e.Rank, "RANK", "SLURM_PROCID", "JOB_COMPLETION_INDEX"); err != nil {
		return e, err
	}
	if err := pick(&e.WorldSize, "WORLD_SIZE", "SLURM_NTASKS"); err != nil {
		return e, err
	}
	e.LocalRank = e.Rank
	if err := pick(&e.LocalRank, "LOCAL_RANK", "SLURM_LOCALID"); err != nil {
		return e, err
	}
	if s, ok := look("MASTER_ADDR"); ok && s != "" {
		e.MasterAddr = s
	}
	if err := pick(&e.MasterPort, "MASTER_PORT"); err != nil {
		return e, err
	}
	return e, e.validate()
}

func (e Env) validate() error {
	if e.WorldSize < 1 {
		return fmt.Errorf("comm: world size %d < 1", e.WorldSize)
	}
	if e.Rank >= e.WorldSize {
		return fmt.Errorf("comm: rank %d out of range for world size %d", e.Rank, e.WorldSize)
	}
	if e.WorldSize > 1 && (e.MasterPort <= 0 || e.MasterPort > 65535) {
		return fmt.Errorf("comm: MASTER_PORT must be set to a port (1-65535) when WORLD_SIZE=%d", e.WorldSize)
	}
	return nil
}
