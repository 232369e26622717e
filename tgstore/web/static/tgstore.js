// tgstore's graph view: wheel zooms at the pointer, drag pans, buttons zoom, fit and go to the root; a search box
// finds nodes by op or arg (folded constants included); clicking a node lights its sources and users; a minimap
// shows where the view is. A big graph opens at a readable scale on its root (the SINK) instead of fitted.
// A big drawing is not in the page: the box names its SVG's address (data-svg) and it is fetched first.
// Two graphs side by side are two boxes: each is set up alike, and the search and zoom buttons act on both.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll(".tgstore-graph-box").forEach((box) => {
    if (!box.dataset.svg) { initGraph(box); return; }
    fetch(box.dataset.svg).then((r) => r.text()).then((text) => {
      const loading = box.querySelector(".tgstore-loading");
      if (loading) loading.remove();
      box.insertAdjacentHTML("afterbegin", text);
      initGraph(box);
    });
  });
});

function initGraph(box) {
  const svg = box.querySelector("svg");
  if (!svg) return;
  const width = svg.viewBox.baseVal.width, height = svg.viewBox.baseVal.height;
  svg.setAttribute("width", "100%");
  svg.setAttribute("height", "100%");
  const nodes = Array.from(svg.querySelectorAll("g.node"));
  const byId = new Map(nodes.map((g) => [g.id, g]));
  const edges = Array.from(svg.querySelectorAll("path.edge"));
  const users = new Map();
  nodes.forEach((g) => (g.dataset.src || "").split(" ").filter(Boolean).forEach((s) => {
    if (!users.has("n" + s)) users.set("n" + s, []);
    users.get("n" + s).push(g.id);
  }));
  let view = { x: 0, y: 0, w: width, h: height };
  const minimap = box.querySelector(".tgstore-minimap");
  const apply = () => { svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`); drawMinimap(); };
  const zoom = (factor, cx, cy) => {
    const r = svg.getBoundingClientRect();
    const px = view.x + (cx === undefined ? 0.5 : (cx - r.left) / r.width) * view.w;
    const py = view.y + (cy === undefined ? 0.5 : (cy - r.top) / r.height) * view.h;
    view = { x: px - (px - view.x) * factor, y: py - (py - view.y) * factor, w: view.w * factor, h: view.h * factor };
    apply();
  };
  const fit = () => {
    const r = box.getBoundingClientRect();
    const scale = Math.max(width / r.width, height / r.height);
    view = { x: 0, y: 0, w: r.width * scale, h: r.height * scale };
    apply();
  };
  const centre = (g, scale) => {  // put node g in the middle at `scale` (1 = the drawing's own size)
    const rect = g.querySelector("rect");
    const r = box.getBoundingClientRect();
    const w = r.width * scale, h = r.height * scale;
    const cx = rect.x.baseVal.value + rect.width.baseVal.value / 2, cy = rect.y.baseVal.value + rect.height.baseVal.value / 2;
    view = { x: cx - w / 2, y: cy - h / 2, w, h };
    apply();
  };
  const root = () => nodes.filter((g) => !users.has(g.id) && !g.classList.contains("removed")).pop() || nodes[nodes.length - 1];
  function drawMinimap() {
    if (!minimap) return;
    const ctx = minimap.getContext("2d");
    const s = Math.min(minimap.width / width, minimap.height / height);
    ctx.clearRect(0, 0, minimap.width, minimap.height);
    nodes.forEach((g) => {
      if (g.classList.contains("collapsed-away")) return;
      const rect = g.querySelector("rect");
      ctx.fillStyle = g.classList.contains("changed") ? "#e0301e" : g.classList.contains("added") ? "#1e9e3a"
        : g.classList.contains("found") ? "#0969da" : "#9aa4ae";
      ctx.fillRect(rect.x.baseVal.value * s, rect.y.baseVal.value * s, Math.max(1, rect.width.baseVal.value * s), Math.max(1, rect.height.baseVal.value * s));
    });
    ctx.strokeStyle = "#0969da";
    ctx.lineWidth = 1.5;
    ctx.strokeRect(view.x * s, view.y * s, view.w * s, view.h * s);
  }
  if (minimap) {
    minimap.style.display = nodes.length > 150 ? "block" : "none";
    minimap.addEventListener("mousedown", (e) => {
      e.stopPropagation();
      const r = minimap.getBoundingClientRect();
      const s = Math.min(minimap.width / width, minimap.height / height);
      view = { ...view, x: (e.clientX - r.left) / s - view.w / 2, y: (e.clientY - r.top) / s - view.h / 2 };
      apply();
    });
  }
  // start: small graphs fitted; big ones readable on the first change, else on the root
  const firstChange = svg.querySelector("g.node.changed, g.node.added");
  if (nodes.length > 300) centre(firstChange || root(), 1.2); else fit();
  box.dataset.start = nodes.length > 300 ? (firstChange ? "change" : "root") : "fit";
  box.addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, e.clientX, e.clientY); },
                       { passive: false });
  let drag = null, moved = false;
  box.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, view: { ...view } }; moved = false; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    if (Math.abs(e.clientX - drag.x) + Math.abs(e.clientY - drag.y) > 3) moved = true;
    const r = svg.getBoundingClientRect();
    view = { ...drag.view, x: drag.view.x - (e.clientX - drag.x) * view.w / r.width,
             y: drag.view.y - (e.clientY - drag.y) * view.h / r.height };
    apply();
  });
  // collapse/expand: a node's toggle (top right, on nodes with sources) hides its exclusive sources, those whose
  // every use lies inside its own source tree, and the edges touching them; clicked again, shows them again (a node
  // hidden by two collapsed nodes stays hidden until both are expanded). ?collapse=n12,n40 toggles at load.
  const hiders = new Map();  // hidden node id -> how many collapsed nodes hide it
  const hiddenBy = new Map();  // collapsed node id -> the ids it hides
  const srcsOf = (g) => (g.dataset.src || "").split(" ").filter(Boolean).map((s) => "n" + s);
  const exclusive = (g) => {  // users come after their sources: decide from the highest index down
    const inside = new Set(), seen = new Set(), queue = srcsOf(g);
    while (queue.length) { const id = queue.pop(); if (!seen.has(id) && byId.has(id)) { seen.add(id); queue.push(...srcsOf(byId.get(id))); } }
    Array.from(seen).sort((a, b) => Number(b.slice(1)) - Number(a.slice(1))).forEach((id) => {
      if ((users.get(id) || []).every((u) => u === g.id || inside.has(u))) inside.add(id);
    });
    return inside;
  };
  const setHidden = () => {
    nodes.forEach((n) => n.classList.toggle("collapsed-away", (hiders.get(n.id) || 0) > 0));
    edges.forEach((p) => p.classList.toggle("collapsed-away", (hiders.get("n" + p.dataset.a) || 0) > 0 || (hiders.get("n" + p.dataset.b) || 0) > 0));
    svg.querySelectorAll(".edge-labels text").forEach((t) => t.classList.toggle("collapsed-away", (hiders.get("n" + t.dataset.b) || 0) > 0));
    box.dataset.hidden = String(nodes.filter((n) => n.classList.contains("collapsed-away")).length);
    drawMinimap();
  };
  const toggle = (g) => {
    const badge = g.querySelector(".toggle text");
    if (hiddenBy.has(g.id)) {
      hiddenBy.get(g.id).forEach((id) => hiders.set(id, hiders.get(id) - 1));
      hiddenBy.delete(g.id);
      g.classList.remove("collapsed");
      if (badge) badge.textContent = "−";
    } else {
      const hide = exclusive(g);
      hide.forEach((id) => hiders.set(id, (hiders.get(id) || 0) + 1));
      hiddenBy.set(g.id, hide);
      g.classList.add("collapsed");
      g.dataset.hides = String(hide.size);
      if (badge) badge.textContent = "+" + hide.size;
    }
    setHidden();
  };
  const NS = "http://www.w3.org/2000/svg";
  nodes.forEach((g) => {
    if (!srcsOf(g).length) return;
    const rect = g.querySelector("rect");
    const t = document.createElementNS(NS, "g");
    t.setAttribute("class", "toggle");
    t.setAttribute("transform", `translate(${rect.x.baseVal.value + rect.width.baseVal.value},${rect.y.baseVal.value})`);
    t.innerHTML = '<title>hide / show the sources only this node uses</title><rect x="-8" y="-7" width="16" height="12" rx="3"/><text y="3" font-size="9">−</text>';
    t.addEventListener("click", (e) => { e.stopPropagation(); toggle(g); });
    t.addEventListener("mousedown", (e) => e.stopPropagation());
    g.appendChild(t);
  });
  (new URLSearchParams(location.search).get("collapse") || "").split(",").filter((id) => byId.has(id))
    .forEach((id) => toggle(byId.get(id)));
  // click a node: light it, its sources and its users (click the background to clear)
  const clear = () => { box.classList.remove("focus"); svg.querySelectorAll(".lit, .picked").forEach((el) => el.classList.remove("lit", "picked")); };
  svg.addEventListener("click", (e) => {
    if (moved) return;
    const g = e.target.closest("g.node");
    clear();
    if (!g) return;
    const near = new Set([g.id, ...(g.dataset.src || "").split(" ").filter(Boolean).map((s) => "n" + s), ...(users.get(g.id) || [])]);
    near.forEach((id) => byId.get(id) && byId.get(id).classList.add("lit"));
    g.classList.add("picked");
    edges.forEach((p) => { if (p.dataset.a === g.id.slice(1) || p.dataset.b === g.id.slice(1)) p.classList.add("lit"); });
    box.classList.add("focus");
  });
  // search: op or arg (and folded constants); Enter goes to the next match
  const search = document.querySelector(".tgstore-search");
  const foundLabel = document.querySelector(".tgstore-found");
  let hits = [], at = -1;
  const find = (q) => {
    nodes.forEach((g) => g.classList.remove("found"));
    q = q.trim().toLowerCase();
    hits = q ? nodes.filter((g) => (g.querySelector("title").textContent + " " + (g.dataset.folded || "")).toLowerCase().includes(q)) : [];
    hits.forEach((g) => g.classList.add("found"));
    at = -1;
    if (foundLabel) foundLabel.textContent = q ? `${hits.length} found` : "";
    if (hits.length) next();
    drawMinimap();
  };
  const next = () => { if (!hits.length) return; at = (at + 1) % hits.length; centre(hits[at], 1.2); };
  if (search) {
    search.addEventListener("input", () => find(search.value));
    search.addEventListener("keydown", (e) => { if (e.key === "Enter") { e.preventDefault(); next(); } });
    const initial = new URLSearchParams(location.search).get("find");
    if (initial) { search.value = initial; find(initial); }
  }
  document.querySelectorAll("[data-zoom]").forEach((b) => b.addEventListener("click", () => {
    const how = b.dataset.zoom;
    if (how === "fit") fit(); else if (how === "root") centre(root(), 1.2); else zoom(how === "in" ? 1 / 1.4 : 1.4);
  }));
}

// The diff page: a section left closed to keep the page small loads its table the first time it is opened.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("details.tgstore-section[data-load]").forEach((section) => {
    section.addEventListener("toggle", () => {
      if (!section.open || section.dataset.loaded) return;
      section.dataset.loaded = "1";
      fetch(section.dataset.load).then((r) => r.text()).then((html) => {
        const deferred = section.querySelector(".tgstore-deferred");
        if (deferred) deferred.outerHTML = html;
      });
    });
  });
  // a link to one section (#section-KERNEL:KEY) opens it
  const wanted = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (wanted && wanted.matches("details.tgstore-section")) { wanted.open = true; wanted.scrollIntoView(); }
});

// The kernel workbench: tabs (graph, steps, source, UOps, canonical) shown one at a time, the one named by the
// address's #fragment; ←/→ follow the pass stepper's prev/next links and ↑/↓ the rewrite step links, keeping the tab.
document.addEventListener("DOMContentLoaded", () => {
  const bench = document.querySelector(".tgstore-workbench");
  if (!bench) return;
  const tabs = Array.from(document.querySelectorAll(".tgstore-panel-tabs a[data-tab]"));
  const show = (name) => {
    if (!tabs.some((a) => a.dataset.tab === name)) name = "graph";
    document.querySelectorAll("section.tgstore-tab").forEach((s) => { s.hidden = s.id !== name; });
    tabs.forEach((a) => a.classList.toggle("selected", a.dataset.tab === name));
    bench.dataset.tab = name;
  };
  tabs.forEach((a) => a.addEventListener("click", (e) => {
    e.preventDefault();
    history.replaceState(null, "", "#" + a.dataset.tab);
    show(a.dataset.tab);
  }));
  show(location.hash.slice(1) || "graph");
  // the #tab names a tab, not a place to scroll to
  if ("scrollRestoration" in history) history.scrollRestoration = "manual";
  window.scrollTo(0, 0);
  window.addEventListener("load", () => window.scrollTo(0, 0));
  const follow = (selector, tab) => {
    const link = document.querySelector(selector);
    if (!link) return false;
    location.href = link.href.split("#")[0] + "#" + tab;
    return true;
  };
  document.addEventListener("keydown", (e) => {
    if (e.target.closest("input, textarea, select") || e.altKey || e.ctrlKey || e.metaKey) return;
    const tab = bench.dataset.tab;
    let done = false;
    if (e.key === "ArrowLeft") done = follow(".tgstore-pass-stepper a[rel=prev]", tab);
    else if (e.key === "ArrowRight") done = follow(".tgstore-pass-stepper a[rel=next]", tab);
    else if (e.key === "ArrowUp") done = follow("a.tgstore-step-prev", "steps");
    else if (e.key === "ArrowDown") done = follow("a.tgstore-step-next", "steps");
    if (done) e.preventDefault();
  });
  const list = document.querySelector(".tgstore-pass-list"), here = list && list.querySelector("tr.selected");
  if (here) list.scrollTop = here.offsetTop - list.clientHeight / 2;  // the list alone scrolls, not the page
  const more = list && list.querySelector(".tgstore-pass-more");
  if (more) {
    // which passes the list's fold hides, above and below, said at its visible bottom
    const rows = Array.from(list.querySelectorAll("tbody tr"));
    const pos = (r) => "#" + r.cells[0].textContent.trim();
    const say = () => {
      const box = list.getBoundingClientRect(), bottom = box.bottom - more.offsetHeight + 1;
      const below = rows.filter((r) => r.getBoundingClientRect().bottom > bottom);
      const above = rows.filter((r) => r.getBoundingClientRect().top < box.top - 1);
      const parts = [];
      if (below.length) parts.push(`▼ ${below.length} more below (${pos(below[0])}–${pos(below[below.length - 1])})`);
      if (above.length) parts.push(`▲ ${above.length} above (${pos(above[0])}–${pos(above[above.length - 1])})`);
      more.textContent = parts.length ? parts.join(" · ") : `${rows.length} passes, all shown`;
      more.classList.toggle("tgstore-folded", below.length > 0);
    };
    say();
    list.addEventListener("scroll", say);
    window.addEventListener("resize", say);
  }
});

// The home page's case list: typing filters the rows by case name.
document.addEventListener("DOMContentLoaded", () => {
  const search = document.querySelector(".tgstore-case-search");
  if (!search) return;
  const rows = Array.from(document.querySelectorAll("table.tgstore-cases tbody tr"));
  const count = document.querySelector(".tgstore-case-count");
  const filter = () => {
    const q = search.value.trim().toLowerCase();
    let shown = 0;
    rows.forEach((r) => { const hit = !q || r.dataset.case.toLowerCase().includes(q); r.hidden = !hit; shown += hit; });
    if (count) count.textContent = q ? `${shown} of ${rows.length} cases` : `${rows.length} cases`;
  };
  search.addEventListener("input", filter);
  const initial = new URLSearchParams(location.search).get("q");
  if (initial) { search.value = initial; filter(); }
});
