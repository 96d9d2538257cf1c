// The scorecard page's only style sheet (inline, nothing fetched: no font, no image). Its own file
// beside the page's script (scorecard-script.ts): the page's Content-Security-Policy names it by its
// SHA-256, so it is a fixed string, free of "</" so it can sit inside <style> as is
// (scorecard-html.ts asserts this).
export const SCORECARD_STYLE = `
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #111; background: #fff; margin: 0; line-height: 1.45; }
main, header { max-width: 1100px; margin: 0 auto; padding: 0 1.5rem; }
header { padding-top: 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.5rem; }
h2 { font-size: 1.3rem; margin: 2rem 0 0.6rem; border-bottom: 1px solid #999; }
h3 { font-size: 1.05rem; margin: 1.2rem 0 0.4rem; }
h4 { font-size: 0.95rem; margin: 0.6rem 0 0.2rem; }
a { color: #0645ad; }
a:focus-visible, input:focus-visible, textarea:focus-visible, button:focus-visible, summary:focus-visible { outline: 3px solid #111; outline-offset: 2px; }
.skip { position: absolute; left: -10000px; }
.skip:focus { position: static; }
nav ul { list-style: none; padding: 0; margin: 0 0 1rem; display: flex; flex-wrap: wrap; gap: 0.3rem 1rem; }
code, .ref, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; font-size: 0.9em; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f5f5f5; padding: 0.5rem; margin: 0.3rem 0; max-height: 24rem; overflow: auto; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; }
dl.meta dt { font-weight: bold; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
ul.entries, ul.claims, ul.chains { list-style: none; padding: 0; margin: 0; }
.link-target { border: 1px solid #ccc; border-left-width: 4px; padding: 0.4rem 0.6rem; margin: 0 0 0.4rem; scroll-margin-top: 1rem; }
.link-target:target, .link-target.is-target { border: 3px solid #b35900; border-left-width: 10px; background: #fff4dc; }
/* The highlight also says it in words: colour is not the only sign of the followed entry. */
.link-target:target::before, .link-target.is-target::before { content: "Linked here \\2193"; display: block; font-weight: bold; font-size: 0.85rem; }
.entry-head { margin: 0; font-size: 0.85rem; color: #333; }
.entry-head span + span::before { content: " \\00b7  "; }
.summary, .statement { margin: 0.2rem 0; overflow-wrap: anywhere; }
.statement { white-space: pre-wrap; }
.links { margin: 0.15rem 0; font-size: 0.85rem; }
.bad { font-weight: bold; text-decoration: underline; }
.dangling { font-style: italic; }
ol.chain-steps { margin: 0.3rem 0; padding-left: 1.5rem; }
.table-scroll { overflow-x: auto; max-width: 100%; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.9rem; }
th, td { border: 1px solid #bbb; padding: 0.25rem 0.5rem; text-align: left; vertical-align: top; overflow-wrap: anywhere; }
form fieldset { border: 1px solid #999; margin: 0 0 1rem; padding: 0.5rem 1rem; }
form legend { font-weight: bold; }
fieldset.hard-failure { border: 1px dashed #999; }
fieldset.hard-failure legend { font-weight: normal; }
.field { margin: 0 0 0.8rem; }
.field label { display: block; font-weight: bold; }
.help { margin: 0.1rem 0 0.3rem; font-size: 0.85rem; color: #333; }
input[type="number"] { width: 7rem; }
input[type="text"], textarea { width: 100%; max-width: 40rem; box-sizing: border-box; }
[aria-invalid="true"] { outline: 3px solid #a00000; }
.errors { border: 3px solid #a00000; padding: 0.5rem 1rem; margin: 0 0 1rem; }
.errors p { margin: 0; font-weight: bold; }
button { font-size: 1rem; padding: 0.4rem 1rem; }
.status { font-weight: bold; }
tr.expected > td, tr.expected > th { background: #eef4ff; }
dl.instructions dt { font-weight: bold; margin-top: 0.4rem; }
dl.instructions dd { margin: 0 0 0.2rem 1.5rem; }
details.wake { border-top: 1px solid #ccc; padding: 0.2rem 0; }
details.wake > summary, details.by-wake > summary { cursor: pointer; }
details.by-wake > summary { font-weight: bold; margin: 0.4rem 0; }
details.wake > summary h3 { display: inline; font-size: 1.05rem; margin: 0; }
.left-out { border: 2px dashed #b35900; padding: 0.3rem 0.6rem; font-weight: bold; }
.ref.off { font-style: italic; }
/* A control character from the package's text, shown as its escape, never written raw. */
.ctl { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; background: #ffe4e4; border: 1px solid #a00000; padding: 0 0.1rem; }
`;
