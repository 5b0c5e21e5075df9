package bench

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// IntervalProblems checks a parsed summary (ParseSummary) for the
// intervals of the given figures: for every key (a dotted path, as in
// MissingKeys) the summary must hold "<key>_ci95" as [low, high] with
// low <= point <= high, where point is the key's own value. It also checks
// that the summary has a "targets" object whose every entry has an ordered
// ci95 (or null) containing its point and a valid verdict. Smoke tests
// call it; it says nothing about the intervals' widths.
func IntervalProblems(summary map[string]any, keys ...string) []string {
	var problems []string
	for _, key := range keys {
		point, ok := lookup(summary, key).(float64)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: no number", key))
			continue
		}
		if p := checkInterval(key+"_ci95", lookup(summary, key+"_ci95"), point, false); p != "" {
			problems = append(problems, p)
		}
	}
	targets, ok := summary["targets"].(map[string]any)
	if !ok || len(targets) == 0 {
		return append(problems, "targets: missing or empty")
	}
	for _, name := range slices.Sorted(maps.Keys(targets)) {
		t, ok := targets[name].(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("targets.%s: not an object", name))
			continue
		}
		point, okP := t["point"].(float64)
		_, okT := t["target"].(float64)
		verdict, _ := t["verdict"].(string)
		better, _ := t["better"].(string)
		switch {
		case !okP || !okT:
			problems = append(problems, fmt.Sprintf("targets.%s: point or target is not a number: %v", name, t))
		case !Verdict(verdict).Valid():
			problems = append(problems, fmt.Sprintf("targets.%s: verdict %q is not met, missed or undecided", name, verdict))
		case better != string(LowerIsBetter) && better != string(HigherIsBetter):
			problems = append(problems, fmt.Sprintf("targets.%s: better %q is not lower or higher", name, better))
		default:
			if p := checkInterval("targets."+name+".ci95", t["ci95"], point, true); p != "" {
				problems = append(problems, p)
			}
		}
	}
	return problems
}

func checkInterval(name string, v any, point float64, nullOK bool) string {
	if v == nil && nullOK {
		return ""
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return fmt.Sprintf("%s: want [low, high], got %v", name, v)
	}
	low, okL := arr[0].(float64)
	high, okH := arr[1].(float64)
	if !okL || !okH || !(low <= point && point <= high) {
		return fmt.Sprintf("%s: [%v, %v] does not hold the point %v in order", name, arr[0], arr[1], point)
	}
	return ""
}

func lookup(summary map[string]any, key string) any {
	var cur any = summary
	for part := range strings.SplitSeq(key, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = obj[part]
	}
	return cur
}
