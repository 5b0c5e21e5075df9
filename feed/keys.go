package feed

import "strconv"

// keys names the Redis keys of one deployment. All of them start with the
// configured prefix:
//
//	tl:{user}     sorted set: the user's timeline, member = score = post id
//	au:{author}   sorted set: the author's recent post ids (pulled authors)
//	fe:{user}     set: the ids the user follows
//	celebs        set: authors pulled at read time (hybrid)
//	{celebs}:ver  string: the celebrity set's version, a number raised by every change
//	celebs:ver~n  strings: copies of the version, on a Redis Cluster (hotcopies.go)
//	au:{author}~n sorted sets: copies of a celebrity's au:, on a Redis Cluster
//	post:{id}     string: the post's JSON payload
//	fanout        stream of fan-out jobs; fanout:dead holds poison jobs
//
// ({user} and {id} above are ids, not hash tags.) Only celebs and
// {<prefix>celebs}:v are changed together (one script, celebrityChangeScript):
// the second's hash tag is the whole name of the first, so on a Redis
// Cluster both hash to one slot and the first keeps its name from before
// cluster mode. Every other command touches one key; reads of many keys
// (a page's payloads, the celebrities' ranges) are pipelined, which a
// cluster client splits per node.
type keys struct {
	prefix string
	// Precomputed, as every read uses them.
	authorPrefix, postPrefix, celebrities, celebritiesVersion string
	// versionCopyBase names the version's copies (hotcopies.go); without
	// the hash tag, so that they spread over the slots.
	versionCopyBase string
}

func newKeys(prefix string) keys {
	celebs := prefix + "celebs"
	return keys{prefix: prefix, authorPrefix: prefix + "au:", postPrefix: prefix + "post:", celebrities: celebs, celebritiesVersion: "{" + celebs + "}:ver", versionCopyBase: celebs + ":ver"}
}

func (k keys) timeline(user int64) string  { return k.prefix + "tl:" + strconv.FormatInt(user, 10) }
func (k keys) author(author int64) string  { return k.authorPrefix + strconv.FormatInt(author, 10) }
func (k keys) followees(user int64) string { return k.prefix + "fe:" + strconv.FormatInt(user, 10) }
func (k keys) post(id int64) string        { return k.postPrefix + strconv.FormatInt(id, 10) }
func (k keys) stream() string              { return k.prefix + "fanout" }
func (k keys) deadLetters() string         { return k.prefix + "fanout:dead" }

// consumerGroup is the fan-out workers' consumer group.
const consumerGroup = "fanout-workers"
