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
	// mode that is not the best: the gap doubles each time the try leaves
	// that mode behind, and is back at minTryGap when the try makes it the
	// best. A gap reset on any try within 1.25x of the best kept it at
	// minTryGap where spreading was 10-20% slower (the 2-core benchmark
	// host): one epoch in five ran the slower mode.
	minTryGap = 4
	maxTryGap = 64
	// modeGiveUpBy ends a try early once its replies take this many times
	// the best mode's mean: a try that floods a replica whose CPU is capped
	// should cost a tenth of a second, not a whole epoch.
	modeGiveUpBy = 2.0
)

// modeChooser decides, epoch by epoch, whether C3 spreads reads by cost or
// concentrates them on one home replica (see Config.AutoConcentrate). It
// keeps an EWMA of each mode's mean reply latency over the epochs it ran,
// runs the mode with the lower one, and tries the other every gap epochs.
// A mode that gets slower while it runs loses to the other's last mean
// without a try.
//
// The mean latency is what a closed loop of clients turns into throughput
// and what an open loop waits; percentiles of one epoch are too noisy to
// compare. Whichever mode wins depends on the machine, not on the replicas
// alone: where the clients and the replicas share a few cores, one Redis
// that takes every read batches them into fewer event-loop turns and
// leaves the cores to the clients (lowest-ping served 17-27% more reads than
// the spreading policies on the 2-core benchmark host); where each replica has
// a CPU of its own, the home runs out of it (0.37× the reads).
type modeChooser struct {
	epochStart  time.Time
	concentrate bool // the mode of this epoch
	trying      bool // this epoch tries the mode that is not the best
	sum         float64
	replies     int
	// mean is the EWMA of epoch means, spreading at 0 and concentrating at
	// 1, in seconds; zero until the mode ran an epoch.
	mean     [2]float64
	untilTry int
	gap      int
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
		m.epochStart, m.gap, m.untilTry = now, minTryGap, minTryGap
		return m.concentrate
	}
	elapsed := now.Sub(m.epochStart)
	giveUp := m.trying && elapsed >= 2*modeWarmUp && m.replies >= modeMinReplies &&
		m.sum/float64(m.replies) > modeGiveUpBy*m.mean[modeIndex(!m.concentrate)]
	if elapsed < modeEpoch && !giveUp {
		return m.concentrate
	}
	if m.replies >= modeMinReplies {
		mode, epochMean := modeIndex(m.concentrate), m.sum/float64(m.replies)
		if m.mean[mode] == 0 {
			m.mean[mode] = epochMean
		} else {
			m.mean[mode] = (m.mean[mode] + epochMean) / 2
		}
		if m.trying {
			if m.mean[mode] < m.mean[1-mode] {
				m.gap = minTryGap
			} else {
				m.gap = min(2*m.gap, maxTryGap)
			}
		}
	}
	if m.trying {
		m.untilTry = m.gap
	} else {
		m.untilTry--
	}
	best := m.mean[1] > 0 && m.mean[1] < m.mean[0]
	m.trying = !m.trying && m.untilTry <= 0 && m.mean[modeIndex(best)] > 0
	m.concentrate = best != m.trying
	m.epochStart, m.sum, m.replies = now, 0, 0
	return m.concentrate
}

func modeIndex(concentrate bool) int {
	if concentrate {
		return 1
	}
	return 0
}
