"""The pages and scripts of the script-built section ``/js/`` (served by ``scripted.py``).

The front page's HTML is an empty shell; its script assembles every URL at run
time, so no string literal in the scripts holds a slash or a dot of a URL.
"""

from __future__ import annotations

NAVIGATE_TARGET = "/js/article/2"  # where /js/navigate goes, 100 ms after its load event
NAVIGATE_DELAY_MS = 100


# Layout in the shell, not in the style sheet added later: the lazy images must see the
# final geometry from the first frame, or more of them would load at first.
LAYOUT = """
body { margin: 0; font: 16px/1.4 sans-serif; }
#masthead { box-sizing: border-box; height: 72px; margin: 0; padding: 0 16px; font-size: 36px;
  line-height: 72px; white-space: nowrap; overflow: hidden; }
#page { display: grid; grid-template-columns: minmax(0, 1fr) 380px; gap: 16px; padding: 0 16px; }
.story { box-sizing: border-box; height: 1000px; margin: 0 0 16px; padding: 8px 0;
  overflow: hidden; border-bottom: 1px solid #ccc; }
.story h2 { height: 40px; margin: 0; overflow: hidden; font-size: 24px; line-height: 40px; }
.story p { height: 48px; margin: 0 0 8px; overflow: hidden; }
.story img { display: block; width: 320px; height: 180px; background: #eee; }
#sentinel { height: 1px; }
#desk > * { display: block; margin: 0 0 12px; }
"""

SHELL = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>The Scripted Times</title>
<style>{layout}</style>
</head><body>
<h1 id="masthead">The Scripted Times</h1>
<div id="page"><div id="feed"><main id="articles"></main></div><aside id="desk"></aside></div>
<noscript><p>This page is built by JavaScript.</p></noscript>
<script src="/js/app.js"></script>
</body></html>
"""

# No string literal below holds a slash or a dot: URLs are assembled at run time.
APP_JS = r"""// The front page of the Scripted Times: everything on it is built here.
(function () {
  'use strict';
  var SLASH = String.fromCharCode(47);
  var DOT = String.fromCharCode(46);
  var SECTION = ['j', 's'].join('');
  var API = ['ap', 'i'].join('');

  function url(parts, extension) {
    return SLASH + [SECTION].concat(parts).join(SLASH) + (extension ? DOT + extension : '');
  }
  function make(tag, properties, text) {
    var element = document.createElement(tag);
    Object.keys(properties || {}).forEach(function (name) {
      element.setAttribute(name, properties[name]);
    });
    if (text) element.textContent = text;
    return element;
  }
  function getJson(address) {
    return fetch(address).then(function (response) {
      if (!response.ok) throw new Error('HTTP ' + response.status);
      return response.json();
    });
  }

  var sheet = make('link', {rel: 'stylesheet'});
  sheet.href = url(['css', 'theme'], 'css');
  document.head.appendChild(sheet);

  // Images load when they come into the viewport, not before.
  var lazy = new IntersectionObserver(function (entries) {
    entries.forEach(function (entry) {
      if (!entry.isIntersecting) return;
      lazy.unobserve(entry.target);
      entry.target.src = entry.target.getAttribute('data-src');
    });
  });

  var articles = document.getElementById('articles');
  function addArticle(article) {
    var story = make('article', {'class': 'story', id: 'story-' + article.id});
    story.appendChild(make('h2', {}, article.title));
    story.appendChild(make('p', {}, article.summary));
    var image = make('img', {'class': 'lazy', width: '320', height: '180', alt: article.title});
    image.setAttribute('data-src', url(['img', article.id], 'png'));
    story.appendChild(image);
    var more = make('a', {'class': 'read-more'}, 'Read the full story');
    more.href = url(['article', article.id]);
    story.appendChild(more);
    articles.appendChild(story);
    lazy.observe(image);
  }

  // Infinite scroll: the sentinel below the articles fetches the next page when seen.
  var feed = document.getElementById('feed');
  var sentinel = feed.appendChild(make('div', {id: 'sentinel'}));
  var status = feed.appendChild(make('p', {id: 'feed-status', 'data-state': 'loading'}, 'Loading'));
  var pagesLoaded = 0;
  var loading = false;
  var ended = false;
  var scroller = new IntersectionObserver(function (entries) {
    if (entries.some(function (entry) { return entry.isIntersecting; })) nextPage();
  });
  function nextPage() {
    if (loading || ended) return;
    loading = true;
    getJson(url([API, 'articles']) + '?page=' + (pagesLoaded + 1)).then(function (answer) {
      answer.articles.forEach(addArticle);
      pagesLoaded = answer.page;
      ended = !answer.more;
      loading = false;
      status.textContent = ended ? 'No more stories' : 'Page ' + pagesLoaded + ' of ' + answer.pages;
      status.setAttribute('data-state', ended ? 'end' : 'more');
      // Observed anew below the new articles: still in view, it asks for the next page at once.
      scroller.unobserve(sentinel);
      if (!ended) scroller.observe(sentinel);
    }).catch(function (error) {
      loading = false;
      status.textContent = 'The stories could not be loaded: ' + error;
      status.setAttribute('data-state', 'error');
    });
  }
  nextPage();

  // One extra batch on demand; the button then stays disabled.
  var loadMore = feed.appendChild(make('button', {id: 'load-more', type: 'button'}, 'Load more'));
  loadMore.addEventListener('click', function () {
    if (loadMore.disabled) return;
    loadMore.disabled = true;
    loadMore.textContent = 'Loading';
    getJson(url([API, 'more']) + '?batch=1').then(function (answer) {
      answer.articles.forEach(addArticle);
      loadMore.textContent = 'No more stories';
    }).catch(function (error) {
      loadMore.disabled = false;
      loadMore.textContent = 'Load more (' + error + ')';
    });
  });

  // The desk: tabs, an in-page link, a link away, media and an iframe.
  var desk = document.getElementById('desk');
  var tabs = desk.appendChild(make('div', {id: 'tabs', role: 'tablist'}));
  var panel = make('div', {id: 'tab-panel', role: 'tabpanel'}, 'Pick a section above');
  TAB_NAMES.forEach(function (tab) {
    var button = make('button', {
      id: 'tab-' + tab[0], type: 'button', role: 'tab', 'aria-selected': 'false', 'aria-controls': 'tab-panel'
    }, tab[1]);
    button.addEventListener('click', function () {
      Array.prototype.forEach.call(tabs.children, function (other) {
        other.setAttribute('aria-selected', String(other === button));
      });
      getJson(url([API, 'tab', tab[0]])).then(function (answer) {
        panel.textContent = answer.text;
      });
    });
    tabs.appendChild(button);
  });
  desk.appendChild(panel);

  var moreLink = desk.appendChild(make('a', {id: 'more-link', href: '#more'}, 'More from the desk'));
  var extra = desk.appendChild(make('div', {id: 'extra'}));
  moreLink.addEventListener('click', function (event) {
    event.preventDefault();
    getJson(url([API, 'extra'])).then(function (answer) {
      extra.textContent = answer.text;
    });
  });
  var lead = desk.appendChild(make('a', {id: 'lead-link'}, 'Read the lead story'));
  lead.href = url(['article', 1]);

  [['audio', 'audio', 'clip'], ['video', 'video', 'reel']].forEach(function (media) {
    var player = make(media[0], {id: media[1], controls: '', preload: 'none', width: '320', height: '180'});
    player.muted = true;  // muted media may play without a user gesture
    player.src = url(['media', media[2]], 'wav');  // after preload=none: nothing loads before play()
    desk.appendChild(player);
  });

  var frame = make('iframe', {id: 'frame', title: 'Weather', width: '320', height: '140'});
  frame.src = url(['frame']);
  desk.appendChild(frame);
})();
"""

THEME_CSS = """@font-face {
  font-family: "Scripted News";
  src: url("/js/font/news.woff2") format("woff2");
  font-display: swap;
}
#masthead { font-family: "Scripted News", Georgia, serif; color: #7a1f1f; }
.story h2 { color: #222; }
#tab-panel, #extra { min-height: 24px; padding: 8px; background: #f4f4f4; }
"""

ARTICLE_SHELL = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>The Scripted Times</title>
</head><body>
<main id="article"></main>
<script src="/js/article.js"></script>
</body></html>
"""

ARTICLE_JS = r"""// An article of the Scripted Times, built from its JSON (its id: the last path segment).
(function () {
  'use strict';
  var SLASH = String.fromCharCode(47);
  var DOT = String.fromCharCode(46);
  var SECTION = ['j', 's'].join('');
  var id = location.pathname.split(SLASH).pop();
  function url(parts, extension) {
    return SLASH + [SECTION].concat(parts).join(SLASH) + (extension ? DOT + extension : '');
  }
  var main = document.getElementById('article');
  fetch(url([['ap', 'i'].join(''), 'article', id])).then(function (response) {
    if (!response.ok) throw new Error('HTTP ' + response.status);
    return response.json();
  }).then(function (article) {
    document.title = article.title;
    var heading = main.appendChild(document.createElement('h1'));
    heading.textContent = article.title;
    var image = main.appendChild(document.createElement('img'));
    image.width = 320;
    image.height = 180;
    image.alt = article.title;
    image.src = url(['img', article.id], 'png');
    article.body.forEach(function (text) {
      main.appendChild(document.createElement('p')).textContent = text;
    });
    var front = main.appendChild(document.createElement('a'));
    front.id = 'front-link';
    front.href = url(['']);
    front.textContent = 'Back to the front page';
  }).catch(function (error) {
    main.textContent = 'The article could not be loaded: ' + error;
  });
})();
"""

FRAME = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Weather</title></head>
<body style="margin: 0; font: 14px sans-serif">
<p>Weather: dry, light wind from the west.</p>
<img src="/js/img/frame.png" width="64" height="64" alt="Sun">
</body></html>
"""


def page(title: str, body: str) -> bytes:
    return (
        f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>{title}</title></head>\n"
        f"<body>\n<h1>{title}</h1>\n{body}\n</body></html>\n"
    ).encode()


HANG = page(
    "A page that hangs",
    """<p id="state">From 100 ms after its load event, this page's script runs forever.</p>
<script>
window.addEventListener('load', function () {
  document.getElementById('state').textContent = 'Spinning';
  setTimeout(function () { while (true) {} }, 100);
});
</script>""",
)

CRASH = page(
    "A page that exhausts memory",
    """<p id="state">From 100 ms after its load event, this page's script allocates without bound:
a renderer started with --js-flags=--max-old-space-size=64 crashes at once.</p>
<script>
window.hoard = [];
window.addEventListener('load', function () {
  document.getElementById('state').textContent = 'Allocating';
  setTimeout(function () {
    while (true) { window.hoard.push(new Array(1 << 20).fill(window.hoard.length)); }
  }, 100);
});
</script>""",
)

NAVIGATE = page(
    "A page that leaves by itself",
    f"""<p>Just after its load event, this page's script goes to {NAVIGATE_TARGET}.</p>
<script>
window.addEventListener('load', function () {{
  setTimeout(function () {{ location.href = '{NAVIGATE_TARGET}'; }}, {NAVIGATE_DELAY_MS});
}});
</script>""",
)

SERVICE_WORKER_PAGE = page(
    "A page with a service worker",
    """<p id="state" data-state="registering">Registering the service worker</p>
<script>
// data-state ends as "worker" (the JSON came through the worker) or "network" (no worker).
function fetchArticles() {
  return fetch('/js/api/articles?page=1').then(function (response) {
    var how = response.headers.get('X-Served-By') === 'service-worker' ? 'worker' : 'network';
    return response.json().then(function (answer) {
      var state = document.getElementById('state');
      state.textContent = how + ': ' + answer.articles.length + ' articles';
      state.setAttribute('data-state', how);
    });
  });
}
function controlled() {
  // The worker claims the page when it activates; the fetch then goes through it.
  if (navigator.serviceWorker.controller) return Promise.resolve();
  return new Promise(function (resolve) {
    navigator.serviceWorker.addEventListener('controllerchange', resolve, {once: true});
  });
}
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.register('/js/sw.js', {scope: '/js/service-worker'})
    .then(function (registration) {
      // A blocked registration may resolve to nothing (Playwright's does): no worker will come.
      if (!registration) throw new Error('no worker');
      return navigator.serviceWorker.ready;
    })
    .then(controlled)
    .then(fetchArticles, fetchArticles);
} else {
  fetchArticles();
}
</script>""",
)

SW_JS = """// The worker of /js/service-worker: it answers its page's fetches itself, from the network.
self.addEventListener('install', function () { self.skipWaiting(); });
self.addEventListener('activate', function (event) { event.waitUntil(self.clients.claim()); });
self.addEventListener('fetch', function (event) {
  event.respondWith(fetch(event.request).then(function (response) {
    var headers = new Headers(response.headers);
    headers.set('X-Served-By', 'service-worker');
    return response.blob().then(function (body) {
      return new Response(body, {status: response.status, headers: headers});
    });
  }));
});
"""

REFUSED = """<p><img src="/js/img/own.png" width="64" height="64" alt="Ours"> <span id="own">…</span></p>
<p><img id="external-image" src="{external}/js/ext/photo.png" width="64" height="64" alt="Theirs">
<span id="external">…</span></p>
<script>
function show(id, promise) {{
  return promise.then(function (response) {{ return response.json(); }})
    .then(function (answer) {{ document.getElementById(id).textContent = answer.text; }},
          function () {{ document.getElementById(id).textContent = 'refused'; }});
}}
Promise.all([show('own', fetch('/js/api/extra')), show('external', fetch('{external}/js/ext/feed.json'))])
  .then(function () {{ document.body.setAttribute('data-state', 'settled'); }});
</script>"""
