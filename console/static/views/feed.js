// Feed view: a user's newest feed page as pull, push and hybrid each
// assemble it, side by side (GET /v1/users/{id}/feed/strategies, refreshed
// every 2 s while the tab is visible; the served strategy is marked), the
// celebrity threshold, posting as a user (POST /v1/posts) and that post's
// fan-out progress: followers reached over time
// (GET /v1/posts/{id}/fanout, polled until every follower has it).
// Creating users and follows is there too, to set a scene up by hand.
import { el, showProblem } from '../lib.js';
import { lineChart } from '../chart.js';

export const title = 'Feed';

const FEED_EVERY_MS = 2000;
const FANOUT_EVERY_MS = 250;
const FANOUT_WATCH_MS = 60000;

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
  async function loadFeed() {
    if (!readerID || feedBusy) return;
    feedBusy = true;
    try {
      const view = await requestJSON('GET', `/v1/users/${encodeURIComponent(readerID)}/feed/strategies?limit=20`);
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
    } catch (err) {
      fail(err);
      columns.dataset.state = 'error';
    } finally {
      feedBusy = false;
    }
  }
  showFeed.addEventListener('click', () => { readerID = reader.value.trim(); columns.dataset.state = 'loading'; loadFeed(); });

  // Post as a user, and watch the fan-out.
  const author = input('author-id', { inputmode: 'numeric', size: '8' });
  const text = input('post-text', { placeholder: '오늘 점심은 치킨', size: '30' });
  const post = button('post', 'Post');
  const fanout = el('div', { attrs: { id: 'fanout' } });
  let watch = null;
  post.addEventListener('click', async () => {
    fanout.dataset.state = 'posting';
    const before = Date.now(); // no follower can have the post yet
    try {
      const p = await requestJSON('POST', '/v1/posts', { body: { authorId: Number(author.value.trim()), text: text.value } });
      fail(null);
      watchFanout(p.id, before);
    } catch (err) { fail(err); }
  });

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
      points.push({ t: Date.now(), v: p.reached });
      const done = !p.pending && (p.reached >= p.followers || p.celebrity);
      renderFanout(p, points, started, done);
      if (!done && Date.now() - started < FANOUT_WATCH_MS && fanout.dataset.post === String(postID)) {
        watch = setTimeout(tick, FANOUT_EVERY_MS);
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
        el('span', {}, 'reached', el('strong', { class: 'reached', text: `${p.reached.toLocaleString()} / ${p.followers.toLocaleString()}` }), p.truncated ? ' followers (the first ones counted)' : ' followers'),
        el('span', {}, done ? `done in ${secs} s` : p.pending ? `fan-out job pending · ${secs} s` : `${secs} s`)),
      el('p', { class: 'muted note', text: how }),
      el('div', { class: 'fanout-chart' }, lineChart([['reached', points]], { from: points[0].t, to: Math.max(points[points.length - 1].t, points[0].t + 1000), unit: 'followers' })));
    fanout.dataset.reached = String(p.reached);
    fanout.dataset.followers = String(p.followers);
    if (done) fanout.dataset.state = 'done';
  }

  root.append(problemBox,
    el('section', { class: 'card' }, el('h2', { text: 'People' }),
      el('div', { class: 'form-row' }, label('username', username), createUser,
        label('user', follower), label('follows user', followee), follow),
      people),
    el('section', { class: 'card' }, el('h2', { text: 'Post as a user' }),
      el('div', { class: 'form-row' }, label('author id', author), label('text', text), post),
      el('h3', { text: 'Fan-out: followers reached over time' }), fanout),
    el('section', { class: 'card' }, el('h2', { text: 'A feed under each strategy' }),
      el('div', { class: 'form-row' }, label('reader id', reader), showFeed,
        el('span', { class: 'note' }, 'celebrity threshold (hybrid pulls authors with at least this many followers): ', threshold)),
      columns));

  let timer = null;
  return {
    show() {
      loadFeed();
      timer = setInterval(() => { if (document.visibilityState === 'visible') loadFeed(); }, FEED_EVERY_MS);
    },
    hide() {
      clearInterval(timer);
      timer = null;
    },
  };
}
