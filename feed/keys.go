package feed

import "strconv"

// keys names the Redis keys of one deployment. All of them start with the
// configured prefix:
//
//	tl:{user}     sorted set: the user's timeline, member = score = post id
//	au:{author}   sorted set: the author's recent post ids (pulled authors)
//	fe:{user}     set: the ids the user follows
//	celebs        set: authors pulled at read time (hybrid)
//	post:{id}     string: the post's JSON payload
//	fanout        stream of fan-out jobs; fanout:dead holds poison jobs
type keys struct {
	prefix string
	// Precomputed, as every read uses them.
	authorPrefix, postPrefix, celebrities string
}

func newKeys(prefix string) keys {
	return keys{prefix: prefix, authorPrefix: prefix + "au:", postPrefix: prefix + "post:", celebrities: prefix + "celebs"}
}

func (k keys) timeline(user int64) string  { return k.prefix + "tl:" + strconv.FormatInt(user, 10) }
func (k keys) author(author int64) string  { return k.authorPrefix + strconv.FormatInt(author, 10) }
func (k keys) followees(user int64) string { return k.prefix + "fe:" + strconv.FormatInt(user, 10) }
func (k keys) post(id int64) string        { return k.postPrefix + strconv.FormatInt(id, 10) }
func (k keys) stream() string              { return k.prefix + "fanout" }
func (k keys) deadLetters() string         { return k.prefix + "fanout:dead" }

// consumerGroup is the fan-out workers' consumer group.
const consumerGroup = "fanout-workers"
