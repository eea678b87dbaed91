// A job's entrypoint is a driver program: it runs on a worker with CLAWRAY_ADDRESS set, so a
// bare connect() reaches this cluster. Replace it with your own (or an RLJob manifest).
import { connect } from 'clawray';

const cluster = await connect();
try {
  const { nodes } = await cluster.status();
  const alive = nodes.filter((n) => n.state === 'ALIVE');
  for (const n of alive) {
    console.log(`${n.nodeId} ${n.address} GPU=${n.total.GPU ?? 0} CPU=${n.total.CPU ?? 0}`);
  }
  console.log(`${alive.length} live node(s), ${alive.reduce((s, n) => s + (n.total.GPU ?? 0), 0)} GPU(s)`);
} finally {
  await cluster.close();
}
