// Feed view: a user's newest feed page as pull, push and hybrid each
// assemble it, side by side (GET /v1/users/{id}/feed/strategies, refreshed
// every 2 s while the tab is visible; the served strategy is marked), the
// celebrity threshold, posting as a user (POST /v1/posts) and a post's
// fan-out progress: followers reached over time
// (GET /v1/posts/{id}/fanout, polled until every follower has it).
// Creating users and follows is there too, to set a scene up by hand.
//
// It opens on an example found in the data (GET /v1/feed/example): the
// user who follows the most (user A of the write-up's experiment, which the
// demo of `baedal up` seeds) is the reader, and the newest post of the
// reader's feed has its fan-out watched, so a post made anywhere (the
// demo posts a few times a minute) fills the chart. Without feed users it
// says what to run, and looks again every 2 s.
import { el, showProblem } from '../lib.js';
import { lineChart } from '../chart.js';

export const title = 'Feed';

const FEED_EVERY_MS = 2000;
const FANOUT_EVERY_MS = 250;
const FANOUT_WATCH_MS = 60000;
// After a post made in the page, the newest post of the feed is not
// watched in its place for this long.
const KEEP_OWN_POST_MS = 15000;

export function mount(root, { requestJSON }) {
  const problemBox = el('div', { class: 'problem', attrs: { id: 'feed-problem', role: 'alert' } });
  problemBox.hidden = true;
  const fail = (err) => showProblem(problemBox, err);
  const input = (id, attrs = {}) => el('input', { attrs: { id, type: 'text', ...attrs } });
  const button = (id, text) => el('button', { text, attrs: { type: 'button', id } });
  const label = (text, control) => el('label', {}, el('span', { text }), control);

  // People: create a user, follow.
  const username = input('new-username', { placeholder: 'username', size: '14' });
  const createUser = button('create-user', 'Create user');
  const follower = input('follower-id', { inputmode: 'numeric', size: '8' });
  const followee = input('followee-id', { inputmode: 'numeric', size: '8' });
  const follow = button('follow', 'Follow');
  const people = el('div', { class: 'kv', attrs: { id: 'people-result' } });
  createUser.addEventListener('click', async () => {
    try {
      const u = await requestJSON('POST', '/v1/users', { body: { username: username.value.trim(), profilePic: new URL('/console/favicon.svg', location.origin).href } });
      fail(null);
      people.replaceChildren(el('span', {}, 'created user', el('strong', { class: 'user-id', text: u.id }), ` (${u.username})`));
      people.dataset.userId = String(u.id);
    } catch (err) { fail(err); }
  });
  follow.addEventListener('click', async () => {
    try {
      await requestJSON('PUT', `/v1/users/${encodeURIComponent(follower.value.trim())}/follows/${encodeURIComponent(followee.value.trim())}`);
      fail(null);
      people.replaceChildren(el('span', { text: `user ${follower.value.trim()} follows ${followee.value.trim()}` }));
    } catch (err) { fail(err); }
  });

  // A user's feed by strategy.
  const reader = input('reader-id', { inputmode: 'numeric', size: '8' });
  const showFeed = button('show-feed', 'Show feed');
  const threshold = el('strong', { attrs: { id: 'celebrity-threshold' } });
  const columns = el('div', { class: 'timings', attrs: { id: 'feed-columns' } });
  let readerID = '';
  let feedBusy = false;
  let feedAgain = false; // asked for while busy: load again when done
  let newestShown = null; // the newest post id of readerID's feed at the last load
  async function loadFeed() {
    if (!readerID) return;
    if (feedBusy) {
      feedAgain = true;
      return;
    }
    feedBusy = true;
    const asked = readerID;
    try {
      const view = await requestJSON('GET', `/v1/users/${encodeURIComponent(asked)}/feed/strategies?limit=20`);
      if (asked !== readerID) return; // another reader was asked for meanwhile
      fail(null);
      threshold.textContent = view.celebrity_threshold.toLocaleString();
      columns.replaceChildren(...view.strategies.map((s) => el('div', { class: 'plan', dataset: { strategy: s.strategy } },
        el('h3', {}, s.strategy + ' ', el('span', { class: 'took', text: s.served ? 'served' : 'read for comparison' })),
        s.posts.length ? el('ol', { class: 'posts' }, s.posts.map((p) => el('li', { dataset: { postId: String(p.id) } },
          el('strong', { text: p.username }), ' ', el('span', { class: 'text', text: p.text }),
          el('span', { class: 'muted', text: ' · ' + new Date(p.createdAt).toLocaleTimeString() }))))
          : el('p', { class: 'muted', text: 'no posts' }))));
      columns.dataset.user = String(view.user);
      columns.dataset.state = 'data';
      watchNewest(view);
    } catch (err) {
      fail(err);
      columns.dataset.state = 'error';
    } finally {
      feedBusy = false;
      if (feedAgain) {
        feedAgain = false;
        loadFeed();
      }
    }
  }
  // showReader shows id's feed; the columns of the reader before are gone
  // at once, so nothing on screen is taken for the new reader's.
  function showReader(id) {
    readerID = String(id);
    reader.value = readerID;
    newestShown = null;
    delete columns.dataset.user;
    columns.dataset.state = 'loading';
    columns.replaceChildren(el('p', { class: 'muted', text: `loading user ${readerID}'s feed…` }));
    loadFeed();
  }
  showFeed.addEventListener('click', () => showReader(reader.value.trim()));

  // The example: who to show, found in the data (GET /v1/feed/example).
  const example = el('div', { attrs: { id: 'feed-example' } });
  let exampleBusy = false;
  async function loadExample() {
    if (exampleBusy) return;
    exampleBusy = true;
    try {
      const ex = await requestJSON('GET', '/v1/feed/example');
      threshold.textContent = ex.celebrity_threshold.toLocaleString();
      renderExample(ex);
      if (ex.reader && !readerID) showReader(ex.reader.id);
      if (ex.author && !author.value.trim()) author.value = String(ex.author.id);
    } catch (err) {
      fail(err);
      example.dataset.state = 'error';
    } finally {
      exampleBusy = false;
    }
  }
  const userButton = (u, what, onClick) => el('button', { class: 'link', text: `${u.username} (${u.id})`, attrs: { type: 'button' }, dataset: { user: String(u.id), role: what }, on: { click: onClick } });
  function renderExample(ex) {
    example.dataset.state = ex.users > 0 ? 'data' : 'empty';
    if (ex.users === 0) {
      example.replaceChildren(el('p', { class: 'hint' },
        'No feed users yet. Seed the write-up\'s experiment (users 1..N follow a celebrity; user A follows them all): ',
        el('code', { text: 'baedal feed seed --preset experiment' }),
        ' — the demo of ', el('code', { text: 'baedal up' }), ' seeds a small one by itself. Or create users and follows below.'));
      return;
    }
    const pulled = (u) => ex.strategy === 'hybrid' && u.followerCount >= ex.celebrity_threshold;
    example.replaceChildren(...[el('div', { class: 'kv' },
      el('span', {}, 'feed users', el('strong', { text: ex.users.toLocaleString() })),
      ex.reader && el('span', {}, 'reader: ', userButton(ex.reader, 'reader', () => showReader(ex.reader.id)),
        ` follows ${ex.reader_followees.toLocaleString()} users`),
      ex.author && el('span', {}, 'author: ', userButton(ex.author, 'author', () => { author.value = String(ex.author.id); }),
        ` ${ex.author.followerCount.toLocaleString()} followers, pushed`),
      ex.most_followed && el('span', {}, 'most followed: ', userButton(ex.most_followed, 'most-followed', () => { author.value = String(ex.most_followed.id); }),
        ` ${ex.most_followed.followerCount.toLocaleString()} followers, ` + (pulled(ex.most_followed) ? 'a celebrity: pulled at read time' : 'pushed'))),
      ex.reader ? null : el('p', { class: 'hint', text: 'Nobody follows anybody yet: create a follow below.' })].filter(Boolean));
  }

  // Post as a user, and watch the fan-out.
  const author = input('author-id', { inputmode: 'numeric', size: '8' });
  const text = input('post-text', { placeholder: '오늘 점심은 치킨', size: '30' });
  const post = button('post', 'Post');
  const fanout = el('div', { attrs: { id: 'fanout' } });
  let watch = null;
  let keepOwnUntil = 0; // no newest post replaces a post made here until then
  post.addEventListener('click', async () => {
    fanout.dataset.state = 'posting';
    fanout.dataset.source = 'page';
    keepOwnUntil = Infinity;
    const before = Date.now(); // no follower can have the post yet
    try {
      const p = await requestJSON('POST', '/v1/posts', { body: { authorId: Number(author.value.trim()), text: text.value } });
      fail(null);
      watchFanout(p.id, before);
    } catch (err) {
      fail(err);
      keepOwnUntil = 0;
    }
  });

  // watchNewest watches the fan-out of the newest post of the reader's
  // feed when it is new: a post made anywhere (by the demo, by a script)
  // fills the chart, unless one made in this page is still being watched.
  function watchNewest(view) {
    let newest = null;
    for (const s of view.strategies) {
      for (const p of s.posts) if (!newest || p.id > newest.id) newest = p;
    }
    if (!newest || newest.id === newestShown) return;
    newestShown = newest.id;
    const busy = fanout.dataset.state === 'posting' || fanout.dataset.state === 'watching';
    if (busy || Date.now() < keepOwnUntil || fanout.dataset.post === String(newest.id)) return;
    fanout.dataset.source = 'feed';
    watchFanout(newest.id, Math.min(Date.parse(newest.createdAt), Date.now()));
  }

  function watchFanout(postID, started) {
    clearTimeout(watch);
    const points = [{ t: started, v: 0 }];
    fanout.dataset.post = String(postID);
    fanout.dataset.state = 'watching';
    const tick = async () => {
      let p;
      try {
        p = await requestJSON('GET', `/v1/posts/${postID}/fanout`);
      } catch (err) {
        fail(err);
        fanout.dataset.state = 'error';
        return;
      }
      if (fanout.dataset.post !== String(postID)) return; // another post is watched now
      points.push({ t: Date.now(), v: p.reached });
      const done = !p.pending && (p.reached >= p.followers || p.celebrity);
      renderFanout(p, points, started, done);
      if (done && fanout.dataset.source === 'page') keepOwnUntil = Date.now() + KEEP_OWN_POST_MS;
      if (!done && Date.now() - started < FANOUT_WATCH_MS) {
        watch = setTimeout(tick, FANOUT_EVERY_MS);
      } else if (!done) {
        fanout.dataset.state = 'stopped'; // gave up watching: a newer post may be watched
      }
    };
    tick();
  }

  function renderFanout(p, points, started, done) {
    const secs = ((Date.now() - started) / 1000).toFixed(1);
    const how = p.celebrity ? `the author is a celebrity (≥ ${p.celebrity_threshold.toLocaleString()} followers): pulled at read time, no timeline receives it`
      : p.strategy === 'pull' ? 'pull: no fan-out, readers merge at read time' : 'pushed into each follower\'s timeline';
    fanout.replaceChildren(
      el('div', { class: 'kv' },
        el('span', {}, 'post', el('strong', { text: p.post })),
        el('span', {}, 'by user', el('strong', { text: p.author })),
        el('span', {}, 'reached', el('strong', { class: 'reached', text: `${p.reached.toLocaleString()} / ${p.followers.toLocaleString()}` }), p.truncated ? ' followers (the first ones counted)' : ' followers'),
        el('span', {}, done ? `done in ${secs} s` : p.pending ? `fan-out job pending · ${secs} s` : `${secs} s`)),
      el('p', { class: 'muted note', text: how }),
      el('div', { class: 'fanout-chart' }, lineChart([['reached', points]], { from: points[0].t, to: Math.max(points[points.length - 1].t, points[0].t + 1000), unit: 'followers' })));
    fanout.dataset.reached = String(p.reached);
    fanout.dataset.followers = String(p.followers);
    if (done) fanout.dataset.state = 'done';
  }

  fanout.append(el('p', { class: 'muted note', text: 'Post below, or wait for a post in the reader\'s feed: its fan-out is watched here.' }));

  // The example and the feed first: that is what the view is about.
  root.append(problemBox,
    el('section', { class: 'card' }, el('h2', { text: 'Example' }), example),
    el('section', { class: 'card' }, el('h2', { text: 'A feed under each strategy' }),
      el('div', { class: 'form-row' }, label('reader id', reader), showFeed,
        el('span', { class: 'note' }, 'celebrity threshold (hybrid pulls authors with at least this many followers): ', threshold)),
      columns),
    el('section', { class: 'card' }, el('h2', { text: 'Post as a user' }),
      el('div', { class: 'form-row' }, label('author id', author), label('text', text), post),
      el('h3', { text: 'Fan-out: followers reached over time' }), fanout),
    el('section', { class: 'card' }, el('h2', { text: 'People' }),
      el('div', { class: 'form-row' }, label('username', username), createUser,
        label('user', follower), label('follows user', followee), follow),
      people));

  let timer = null;
  const refresh = () => {
    // Until the example has a reader (the demo may still be seeding),
    // look again; then only the feed is refreshed.
    if (!readerID || example.dataset.state !== 'data') loadExample();
    loadFeed();
  };
  return {
    show() {
      refresh();
      timer = setInterval(() => { if (document.visibilityState === 'visible') refresh(); }, FEED_EVERY_MS);
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
  };
}
