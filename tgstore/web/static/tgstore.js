// Pan and zoom for tgstore's graph view: wheel zooms at the pointer, drag pans, buttons zoom and fit.
document.addEventListener("DOMContentLoaded", () => {
  const box = document.querySelector(".tgstore-graph-box");
  const svg = box && box.querySelector("svg");
  if (!svg) return;
  const width = svg.viewBox.baseVal.width, height = svg.viewBox.baseVal.height;
  svg.setAttribute("width", "100%");
  svg.setAttribute("height", "100%");
  let view = { x: 0, y: 0, w: width, h: height };
  const apply = () => svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
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
  fit();
  box.addEventListener("wheel", (e) => { e.preventDefault(); zoom(e.deltaY > 0 ? 1.15 : 1 / 1.15, e.clientX, e.clientY); },
                       { passive: false });
  let drag = null;
  box.addEventListener("mousedown", (e) => { drag = { x: e.clientX, y: e.clientY, view: { ...view } }; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const r = svg.getBoundingClientRect();
    view = { ...drag.view, x: drag.view.x - (e.clientX - drag.x) * view.w / r.width,
             y: drag.view.y - (e.clientY - drag.y) * view.h / r.height };
    apply();
  });
  document.querySelectorAll("[data-zoom]").forEach((b) => b.addEventListener("click", () => {
    const how = b.dataset.zoom;
    if (how === "fit") fit(); else zoom(how === "in" ? 1 / 1.4 : 1.4);
  }));
});
