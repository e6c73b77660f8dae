/* Run Vega-Lite specs in node (vega + vega-lite from node_modules, no browser) and report
   what they draw: for each setting of the parameters, every mark item's datum.

   stdin:  {"root": ".../node_modules", "spec": {...Vega-Lite...}, "settings": [{param: value}],
            "fields": [datum fields to report] or null for all}
   stdout: [[{"mark": "rect", "role": "...", "datum": {...}, "text": ...}, ...] per setting] */
const fs = require("fs");
const path = require("path");
const input = JSON.parse(fs.readFileSync(0, "utf8"));
const vega = require(path.join(input.root, "vega"));
const vl = require(path.join(input.root, "vega-lite"));

function pick(datum) {
  if (!input.fields) return datum;
  const out = {};
  for (const f of input.fields) if (datum[f] !== undefined) out[f] = datum[f];
  return out;
}

function items(scene, out) {
  if (!scene) return out;
  if (scene.marktype && scene.items && scene.marktype !== "group") {
    for (const item of scene.items) {
      if (item.datum) out.push({ mark: scene.marktype, role: scene.role, name: scene.name || "",
                                 datum: pick(item.datum), text: item.text === undefined ? null : item.text });
    }
  }
  for (const item of scene.items || []) for (const child of item.items || []) items(child, out);
  return out;
}

(async () => {
  const view = new vega.View(vega.parse(vl.compile(input.spec).spec), { renderer: "none" });
  const result = [];
  for (const setting of input.settings) {
    for (const [name, value] of Object.entries(setting)) view.signal(name, value);
    await view.runAsync();
    result.push(items(view.scenegraph().root, []));
  }
  process.stdout.write(JSON.stringify(result));
})().catch(e => { console.error(e.stack || String(e)); process.exit(1); });
