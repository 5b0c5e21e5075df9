package bench

import (
	"errors"
	"fmt"
)

// Side is one contender of a comparison: the baseline or the candidate.
// Run executes one round of its workload (round counts from 0) and records
// what it measures, typically into a LatencyRecorder or LoadResult it owns.
type Side struct {
	Name string
	Run  func(round int) error
}

// Interleave runs every side once per round, alternating the order between
// rounds: round 0 runs the sides first to last, round 1 last to first, and so
// on. With two sides that is A B, B A, A B, B A ("ABBA"): over an even number
// of rounds each side runs first equally often, so warm-up, cache, GC and
// noisy-neighbour drift hit both sides alike.
//
// It stops at the first error and returns it with the side's name and round.
func Interleave(rounds int, sides ...Side) error {
	if rounds < 1 {
		return fmt.Errorf("bench: interleave rounds is %d, want at least 1", rounds)
	}
	if len(sides) == 0 {
		return errors.New("bench: interleave needs at least one side")
	}
	for i, s := range sides {
		if s.Run == nil {
			return fmt.Errorf("bench: interleave side %d (%q) has no Run function", i, s.Name)
		}
	}
	for round := range rounds {
		for _, i := range RoundOrder(round, len(sides)) {
			if err := sides[i].Run(round); err != nil {
				return fmt.Errorf("bench: side %q round %d: %w", sides[i].Name, round, err)
			}
		}
	}
	return nil
}

// RoundOrder returns the order in which Interleave runs n sides in a round:
// 0..n-1 in even rounds, n-1..0 in odd rounds.
func RoundOrder(round, n int) []int {
	order := make([]int, n)
	for i := range order {
		if round%2 == 0 {
			order[i] = i
		} else {
			order[i] = n - 1 - i
		}
	}
	return order
}
