package replica

import "time"

// Epochs of Config.AutoConcentrate.
const (
	// modeEpoch is how long C3 keeps one way of choosing (spreading or
	// concentrating) before it judges it.
	modeEpoch = 250 * time.Millisecond
	// modeWarmUp is the start of an epoch whose replies are not counted:
	// they were mostly sent under the previous epoch's mode.
	modeWarmUp = 50 * time.Millisecond
	// modeMinReplies is the fewest replies that judge an epoch.
	modeMinReplies = 20
	// minTryGap and maxTryGap bound the epochs between two tries of the
	// mode that is not the best: the gap doubles each time the try loses,
	// is one epoch after a try that won (to confirm it) and back at
	// minTryGap when the modes swap.
	minTryGap = 4
	maxTryGap = 64
	// modeWinsToSwap is how many tries in a row the other mode must win to
	// become the best, unless one wins by modeClearWin (its mean latency
	// at most that fraction of the best mode's).
	modeWinsToSwap = 2
	modeClearWin   = 0.8
	// modeGiveUpBy ends a try early once its replies take this many times
	// the best mode's mean: a try that floods a replica whose CPU is capped
	// should cost a tenth of a second, not a whole epoch. An epoch of the
	// best mode this many times slower than the last try brings the next
	// try forward.
	modeGiveUpBy = 2.0
)

// modeChooser decides, epoch by epoch, whether C3 spreads reads by cost or
// concentrates them on one home replica (see Config.AutoConcentrate). It
// runs the best mode, and every gap epochs tries the other one for an
// epoch. A try is judged by the ratio of its mean reply latency to the
// mean of the best mode's epochs just before and just after it; the other
// mode becomes the best after modeWinsToSwap tries in a row with a ratio
// under 1, or one under modeClearWin.
//
// The mean latency is what a closed loop of clients turns into throughput
// and what an open loop waits; percentiles of one epoch are too noisy to
// compare. Whichever mode wins depends on the machine, not on the replicas
// alone: where the clients and the replicas share a few cores, one Redis
// that takes every read batches them into fewer event-loop turns and
// leaves the cores to the clients (lowest-ping served 17-27% more reads than
// the spreading policies on the 2-core benchmark host); where each replica has
// a CPU of its own, the home runs out of it (0.37× the reads).
//
// Comparing a try with its neighbours, not with an average of the best
// mode's epochs, is what makes a 15% difference visible: on that host the
// mean of one mode's epochs wanders by ±20% within seconds, with the load
// of everything else on the machine, and a chooser comparing running
// averages kept whichever mode one lucky epoch had favoured.
type modeChooser struct {
	epochStart time.Time
	// concentrateBest is the best mode (false: spreading); trying marks an
	// epoch of the other one.
	concentrateBest, trying bool
	sum                     float64
	replies                 int
	// before is the mean latency of the last epoch of the best mode, and
	// tried that of a try waiting for the epoch after it (zero: none), in
	// seconds.
	before, tried float64
	// lastTry is the mean of the last try judged, in seconds.
	lastTry float64
	// wins counts the tries in a row the other mode won.
	wins          int
	untilTry, gap int
}

// observe counts a reply's latency in the current epoch, past its warm-up.
func (m *modeChooser) observe(latency time.Duration, now time.Time) {
	if now.Sub(m.epochStart) >= modeWarmUp {
		m.sum += latency.Seconds()
		m.replies++
	}
}

// concentrating ends the epoch when it is due (or when a try is already
// far worse than the best mode) and says whether reads go to the home
// replica now.
func (m *modeChooser) concentrating(now time.Time) bool {
	if m.epochStart.IsZero() {
		m.epochStart, m.gap, m.untilTry = now, minTryGap, 1
		return m.concentrateBest
	}
	elapsed := now.Sub(m.epochStart)
	giveUp := m.trying && elapsed >= 2*modeWarmUp && m.replies >= modeMinReplies &&
		m.sum/float64(m.replies) > modeGiveUpBy*m.before
	if elapsed < modeEpoch && !giveUp {
		return m.concentrateBest != m.trying
	}
	var mean float64
	if m.replies >= modeMinReplies {
		mean = m.sum / float64(m.replies)
	}
	switch {
	case m.trying:
		m.tried, m.trying = mean, false
	case m.tried > 0:
		if mean > 0 {
			m.judge(m.tried, (m.before+mean)/2)
		}
		m.tried, m.before = 0, mean
	default:
		m.before = mean
		m.untilTry--
		if m.lastTry > 0 && mean > modeGiveUpBy*m.lastTry {
			m.untilTry = 0 // the best mode got far slower: try the other now
		}
	}
	m.trying = m.tried == 0 && m.untilTry <= 0 && m.before > 0
	m.epochStart, m.sum, m.replies = now, 0, 0
	return m.concentrateBest != m.trying
}

// judge takes the mean latency of a try and the best mode's around it.
func (m *modeChooser) judge(tried, around float64) {
	ratio := tried / around
	m.lastTry = tried
	if ratio >= 1 {
		m.wins = 0
		m.gap = min(2*m.gap, maxTryGap)
		m.untilTry = m.gap
		return
	}
	m.wins++
	if m.wins >= modeWinsToSwap || ratio <= modeClearWin {
		m.concentrateBest = !m.concentrateBest
		m.wins, m.gap, m.lastTry = 0, minTryGap, around
		m.untilTry = m.gap
		return
	}
	m.untilTry = 1
}
