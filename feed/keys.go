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
type keys struct{ prefix string }

func (k keys) timeline(user int64) string  { return k.prefix + "tl:" + strconv.FormatInt(user, 10) }
func (k keys) author(author int64) string  { return k.authorPrefix() + strconv.FormatInt(author, 10) }
func (k keys) followees(user int64) string { return k.prefix + "fe:" + strconv.FormatInt(user, 10) }
func (k keys) post(id int64) string        { return k.postPrefix() + strconv.FormatInt(id, 10) }

// authorPrefix and postPrefix precede an author's or a post's id in their
// keys; the read script builds those keys from them.
func (k keys) authorPrefix() string { return k.prefix + "au:" }
func (k keys) postPrefix() string   { return k.prefix + "post:" }
func (k keys) celebrities() string  { return k.prefix + "celebs" }
func (k keys) stream() string       { return k.prefix + "fanout" }
func (k keys) deadLetters() string  { return k.prefix + "fanout:dead" }

// consumerGroup is the fan-out workers' consumer group.
const consumerGroup = "fanout-workers"
