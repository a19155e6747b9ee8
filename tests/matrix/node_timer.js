// A chain of setTimeout(cb, MS) in Node.js, COUNT times: libuv's whole-ms
// timer, so the 1 ms is genuine.
//
//   node node_timer.js [ms=1] [count=300]
'use strict';
const ms = Number(process.argv[2] || 1);
const count = Number(process.argv[3] || 300);
const late = [];
const fires = []; // process.hrtime is libuv's uv_hrtime: CLOCK_MONOTONIC
const started = process.hrtime.bigint();
let deadline;

function arm() {
  deadline = process.hrtime.bigint() + BigInt(Math.round(ms * 1e6));
  setTimeout(fire, ms);
}

function fire() {
  const now = process.hrtime.bigint();
  fires.push(now);
  late.push(Number(now - deadline));
  if (late.length < count) {
    arm();
    return;
  }
  if (process.env.MX_FIRES) {
    require('fs').writeFileSync(process.env.MX_FIRES, fires.map((t) => `${t}\n`).join(''));
  }
  late.sort((a, b) => a - b);
  const n = late.length;
  const us = (v) => Math.trunc(v / 1000);
  const elapsed = Number(process.hrtime.bigint() - started) / 1e6;
  console.log(`fires=${n} lateness_p50_us=${us(late[n >> 1])} ` +
    `lateness_p90_us=${us(late[Math.floor(n * 9 / 10)])} elapsed_ms=${Math.trunc(elapsed)}`);
}

arm();
