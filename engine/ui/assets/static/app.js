// grove ui: swap in the HTML the server renders for each element with a
// data-src (the list of heads, a head's live diff) when it changes. The
// server escapes every text it renders; this script adds none of its own.
"use strict";
(function () {
	const poll = Number(document.body.dataset.poll) || 1000;
	for (const el of document.querySelectorAll("[data-src]")) {
		let last = null, busy = false, version = 0;
		const tick = async () => {
			if (busy || document.hidden) return;
			busy = true;
			try {
				const r = await fetch(el.dataset.src, { credentials: "same-origin", cache: "no-store" });
				if (!r.ok) return;
				const html = await r.text();
				if (html === last) return;
				swap(el, html);
				last = html;
				el.dataset.version = String(++version);
			} catch (e) {
				// the server went away: the next tick tries again
			} finally {
				busy = false;
			}
		};
		tick();
		setInterval(tick, poll);
	}
	// swap replaces el's content, keeping which boxes were ticked.
	function swap(el, html) {
		const ticked = new Set(Array.from(el.querySelectorAll("input[type=checkbox]:checked"), (i) => i.value));
		el.innerHTML = html;
		for (const i of el.querySelectorAll("input[type=checkbox]")) {
			if (ticked.has(i.value)) i.checked = true;
		}
	}
})();
