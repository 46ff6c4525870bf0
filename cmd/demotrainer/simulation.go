package main

import (
	"math"
	"math/rand/v2"

	"github.com/primeintellect/primeexporter/cmd/internal/trainerlib"
)

// stragglerEvery makes the last episode of every third step an off-policy
// straggler, dispatched one step before it is trained in.
const stragglerEvery = 3

// stepPlan is what happens at one training step: its episodes and scalars.
// Everything in it derives from the config and the step number alone.
type stepPlan struct {
	step     int
	episodes []episodeSpec
	// eval is the step's eval episode, when the step has one.
	eval     *episodeSpec
	loss     float64
	entropy  float64
	gradNorm float64
}

// planStep simulates step: a policy that answers more problems right as the
// run goes on, and a loss that falls.
func planStep(cfg config, step int) stepPlan {
	r := rand.New(rand.NewPCG(cfg.Seed, uint64(step)))
	progress := float64(step-1) / float64(max(1, cfg.steps-1))
	pCorrect := 0.25 + 0.6*progress
	pFormatted := 0.7 + 0.3*progress
	groupsPerStep := (cfg.episodesPerStep + cfg.rolloutsPerExample - 1) / cfg.rolloutsPerExample

	p := stepPlan{
		step:     step,
		loss:     trainerlib.RoundTo(1.2*math.Exp(-2.5*progress)+0.05*(r.Float64()-0.5), 4),
		entropy:  trainerlib.RoundTo(0.9-0.4*progress+0.02*(r.Float64()-0.5), 4),
		gradNorm: trainerlib.RoundTo(0.3+0.4*r.Float64(), 4),
	}
	episode := func(index, dispatch int, problemID int64, eval bool) episodeSpec {
		e := episodeSpec{
			seed:         cfg.Seed,
			dispatchStep: dispatch,
			index:        index,
			eval:         eval,
			problemID:    problemID,
			env:          cfg.environments[problemID%int64(len(cfg.environments))],
			textBytes:    cfg.episodeTextBytes,
			turns:        1 + r.IntN(4)/3, // a quarter use a tool
			correct:      r.Float64() < pCorrect,
			formatted:    r.Float64() < pFormatted,
		}
		e.reward = 0.9*float64(boolBit(e.correct)) + 0.1*float64(boolBit(e.formatted))
		return e
	}

	for i := range cfg.episodesPerStep {
		group := i / cfg.rolloutsPerExample
		dispatch := step
		if step > 1 && step%stragglerEvery == 0 && i == cfg.episodesPerStep-1 {
			dispatch = step - 1
		}
		p.episodes = append(p.episodes, episode(i, dispatch, int64((dispatch-1)*groupsPerStep+group), false))
	}
	// Advantages are taken within each group of rollouts of one problem.
	for g := 0; g < groupsPerStep; g++ {
		lo, hi := g*cfg.rolloutsPerExample, min((g+1)*cfg.rolloutsPerExample, cfg.episodesPerStep)
		sum := 0.0
		for _, e := range p.episodes[lo:hi] {
			sum += e.reward
		}
		mean := sum / float64(hi-lo)
		for i := lo; i < hi; i++ {
			p.episodes[i].advantage = trainerlib.RoundTo(p.episodes[i].reward-mean, 6)
		}
	}
	if cfg.evalEvery > 0 && step%cfg.evalEvery == 0 {
		e := episode(cfg.episodesPerStep, step, int64(step/cfg.evalEvery-1), true)
		p.eval = &e
	}
	return p
}

// rewardMean is the mean reward of the step's train episodes.
func (p stepPlan) rewardMean() float64 {
	sum := 0.0
	for _, e := range p.episodes {
		sum += e.reward
	}
	return trainerlib.RoundTo(sum/float64(len(p.episodes)), 6)
}

// rewardMeanByEnv is the mean reward of the step's train episodes per
// environment short name.
func (p stepPlan) rewardMeanByEnv() map[string]float64 {
	sums, counts := map[string]float64{}, map[string]int{}
	for _, e := range p.episodes {
		name := trainerlib.EnvShortName(e.env)
		sums[name] += e.reward
		counts[name]++
	}
	means := make(map[string]float64, len(sums))
	for name, sum := range sums {
		means[name] = trainerlib.RoundTo(sum/float64(counts[name]), 6)
	}
	return means
}
