// A change-data-capture application written against the Node.js driver, run by tests/drivers/test_node_driver.py.
//
//     node app.js <scenario> <uri>
//
// Each scenario uses the driver as an application would (its CRUD helpers, its change stream with its own
// resume logic, withTransaction, retryable writes, client bulkWrite, GridFS) against shop.orders, sharded on
// {k: 1} with k < 100 on shard00 and k >= 100 on shard01 (the Python test sets that up), and prints one canonical Extended JSON
// document: what it saw, which the test checks. The driver's command monitoring records the commands it sent,
// so the test can tell a resumed stream or a retried write from one that needed neither.
'use strict';

const { MongoClient, GridFSBucket, BSON } = require('mongodb');
const { EJSON } = BSON;

function outcome(err) {
  const out = { name: err.constructor.name, code: err.code ?? null, codeName: err.codeName ?? null,
                labels: err.errorLabels ? [...err.errorLabels].sort() : [], message: err.message };
  if (err.writeErrors !== undefined) { // a bulk write's: each failed statement, and what was written
    out.writeErrors = err.writeErrors instanceof Map // (a client bulk write's, by operation index)
      ? [...err.writeErrors.entries()].map(([i, e]) => [i, e.code])
      : [].concat(err.writeErrors).map((e) => [e.index, e.code]);
    out.insertedCount = err.insertedCount ?? err.partialResult?.insertedCount ?? null;
  }
  return out;
}

async function attempt(fn) {
  try {
    return { ok: await fn() };
  } catch (err) {
    return { error: outcome(err) };
  }
}

async function take(stream, n) {
  const out = [];
  while (out.length < n) out.push(await stream.next());
  return out;
}

const scenarios = {
  async crud(client) {
    const orders = client.db('shop').collection('orders');
    const out = {};
    out.insertOne = (await orders.insertOne({ _id: 1, k: 5, total: 10 })).insertedId;
    out.insertMany = (await orders.insertMany([{ _id: 2, k: 150, total: 20 }, { _id: 3, k: 50, total: 30 },
                                               { _id: 4, k: 170, total: 40 }])).insertedCount;
    out.find = await orders.find({ total: { $gte: 20 } }).sort({ total: -1 }).project({ _id: 1, k: 1 }).toArray();
    out.countDocuments = await orders.countDocuments({ k: { $gte: 100 } });
    out.estimatedDocumentCount = await orders.estimatedDocumentCount();
    out.distinct = (await orders.distinct('k')).sort((a, b) => a - b);
    const one = await orders.updateOne({ _id: 2, k: 150 }, { $inc: { total: 1 } });
    out.updateOne = [one.matchedCount, one.modifiedCount];
    const many = await orders.updateMany({}, { $set: { seen: true } });
    out.updateMany = [many.matchedCount, many.modifiedCount];
    const up = await orders.updateOne({ _id: 9, k: 120 }, { $set: { total: 90 } }, { upsert: true });
    out.upsert = [up.upsertedCount, up.upsertedId];
    out.replaceOne = (await orders.replaceOne({ _id: 3, k: 50 }, { k: 50, total: 33 })).modifiedCount;
    out.findOneAndUpdate = await orders.findOneAndUpdate({ _id: 1, k: 5 }, { $set: { total: 11 } },
                                                         { returnDocument: 'after' });
    out.findOneAndDelete = await orders.findOneAndDelete({ _id: 4, k: 170 });
    const bulk = await orders.bulkWrite([
      { insertOne: { document: { _id: 5, k: 60, total: 50 } } },
      { updateOne: { filter: { _id: 5, k: 60 }, update: { $set: { total: 55 } } } },
      { deleteOne: { filter: { _id: 9, k: 120 } } },
    ]);
    out.bulkWrite = [bulk.insertedCount, bulk.matchedCount, bulk.modifiedCount, bulk.deletedCount];
    out.aggregate = await orders.aggregate([{ $group: { _id: { $gte: ['$k', 100] }, total: { $sum: '$total' } } },
                                            { $sort: { _id: 1 } }]).toArray();
    out.createIndex = await orders.createIndex({ total: 1 });
    out.indexes = (await orders.listIndexes().toArray()).map((ix) => ix.name);
    const plan = await orders.find({ total: 55 }).explain('queryPlanner');
    out.explainShards = Object.keys(plan.queryPlanner.winningPlan.shards || {}).length
      || plan.queryPlanner.winningPlan.shards.length;
    out.explainStage = plan.queryPlanner.winningPlan.stage;
    await orders.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: 100 + i, k: i, total: 0 })));
    out.batches = await orders.find({ total: 0 }, { batchSize: 7 }).toArray().then((docs) => docs.length);
    out.duplicateKey = await attempt(() => orders.insertOne({ _id: 1, k: 5 }));
    out.unknownModifier = await attempt(() => orders.updateOne({ _id: 1, k: 5 }, { $frobnicate: { a: 1 } }));
    out.noSuchCommand = await attempt(() => client.db('shop').command({ frobnicate: 1 }));
    out.bulkErrors = await attempt(() => orders.insertMany([{ _id: 1, k: 5 }, { _id: 400, k: 5 }, { _id: 2, k: 150 }],
                                                            { ordered: false }));
    out.afterBulk = await orders.countDocuments({ _id: 400 });
    return out;
  },

  async stream(client) {
    const orders = client.db('shop').collection('orders');
    const stream = orders.watch([], { fullDocument: 'updateLookup' });
    await stream.tryNext(); // the aggregate: the stream starts here, before the writes
    await orders.insertOne({ _id: 1, k: 5 });
    await orders.insertOne({ _id: 2, k: 150 });
    await orders.updateOne({ _id: 1, k: 5 }, { $set: { v: 1 } });
    await orders.replaceOne({ _id: 2, k: 150 }, { k: 150, v: 2 });
    await orders.deleteOne({ _id: 1, k: 5 });
    const events = await take(stream, 5);
    const resumeToken = stream.resumeToken;
    await stream.close();
    // a consumer restarted from its stored token sees what follows, once
    const resumed = orders.watch([], { resumeAfter: events[1]._id, fullDocument: 'updateLookup' });
    const rest = await take(resumed, 3);
    await resumed.close();
    const started = orders.watch([], { startAfter: events[3]._id, fullDocument: 'updateLookup' });
    const last = await take(started, 1);
    await started.close();
    return { events, resumeToken, rest, last };
  },

  async failover(client, monitor) {
    // Ten inserts, a step-down of both shards' primaries (through the mongosimFault test command), ten more
    // inserts: retryable writes ride over the elections and the stream delivers all twenty, once each, in order.
    const orders = client.db('shop').collection('orders');
    const stream = orders.watch();
    await stream.tryNext();
    for (let i = 0; i < 10; i++) await orders.insertOne({ _id: i, k: i % 2 ? 150 + i : i });
    const stepDown = [];
    for (const shard of ['shard00', 'shard01']) {
      stepDown.push(await client.db('admin').command({ mongosimFault: shard, stepDown: 30 }));
    }
    for (let i = 10; i < 20; i++) await orders.insertOne({ _id: i, k: i % 2 ? 150 + i : i });
    const events = await take(stream, 20);
    await stream.close();
    return { ids: events.map((e) => e.documentKey._id), tokens: events.map((e) => e._id._data),
             stepDown: stepDown.map((r) => r.ok), aggregates: monitor.count('aggregate'),
             inserts: monitor.count('insert') };
  },

  async transaction(client) {
    const orders = client.db('shop').collection('orders');
    await orders.insertMany([{ _id: 1, k: 5, stock: 3 }, { _id: 2, k: 150, stock: 3 }]);
    const stream = orders.watch();
    await stream.tryNext();
    const session = client.startSession();
    let committed;
    try {
      committed = await session.withTransaction(async () => {
        await orders.updateOne({ _id: 1, k: 5 }, { $inc: { stock: -1 } }, { session });
        await orders.updateOne({ _id: 2, k: 150 }, { $inc: { stock: -1 } }, { session });
        await orders.insertOne({ _id: 3, k: 160, order: true }, { session });
        return 'done';
      });
      // an aborted transaction leaves no event
      session.startTransaction();
      await orders.insertOne({ _id: 4, k: 6 }, { session });
      await session.abortTransaction();
    } finally {
      await session.endSession();
    }
    await orders.insertOne({ _id: 5, k: 7, after: true });
    const events = await take(stream, 4);
    await stream.close();
    // a write conflict with an open transaction: the driver sees TransientTransactionError
    const a = client.startSession();
    const b = client.startSession();
    let conflict;
    try {
      a.startTransaction();
      await orders.updateOne({ _id: 1, k: 5 }, { $set: { by: 'a' } }, { session: a });
      b.startTransaction();
      conflict = await attempt(() => orders.updateOne({ _id: 1, k: 5 }, { $set: { by: 'b' } }, { session: b }));
      await b.abortTransaction();
      await a.commitTransaction();
    } finally {
      await a.endSession();
      await b.endSession();
    }
    const final = await orders.find({}, { sort: { _id: 1 } }).toArray();
    return { committed, events, conflict, final };
  },
};

scenarios.clientBulkWrite = async function clientBulkWrite(client) {
  // the driver's client-level bulkWrite (the 8.0 server's bulkWrite command) across two namespaces
  const ops = [
    { namespace: 'shop.orders', name: 'insertOne', document: { _id: 1, k: 5 } },
    { namespace: 'shop.items', name: 'insertOne', document: { _id: 1, sku: 'a' } },
    { namespace: 'shop.orders', name: 'updateOne', filter: { _id: 1, k: 5 }, update: { $set: { v: 1 } } },
    { namespace: 'shop.orders', name: 'insertOne', document: { _id: 2, k: 150 } },
    { namespace: 'shop.items', name: 'deleteOne', filter: { _id: 1 } },
  ];
  const r = await client.bulkWrite(ops, { verboseResults: true });
  const result = {
    counts: [r.insertedCount, r.matchedCount, r.modifiedCount, r.deletedCount],
    inserted: [...r.insertResults.entries()].map(([i, v]) => [i, v.insertedId]),
    updated: [...r.updateResults.entries()].map(([i, v]) => [i, v.matchedCount, v.modifiedCount]),
    deleted: [...r.deleteResults.entries()].map(([i, v]) => [i, v.deletedCount]),
  };
  result.failed = await attempt(() => client.bulkWrite([
    { namespace: 'shop.orders', name: 'insertOne', document: { _id: 1, k: 5 } },
    { namespace: 'shop.orders', name: 'insertOne', document: { _id: 3, k: 7 } },
  ], { ordered: false }));
  result.orders = await client.db('shop').collection('orders').find({}, { sort: { _id: 1 } }).toArray();
  return result;
};

scenarios.gridfs = async function gridfs(client) {
  // GridFS through the driver: its indexes, chunked upload, download and a delete, on a sharded cluster
  const bucket = new GridFSBucket(client.db('files'), { chunkSizeBytes: 64 * 1024 });
  const data = Buffer.alloc(300 * 1024 + 17, 7);
  const id = await new Promise((resolve, reject) => {
    const up = bucket.openUploadStream('blob.bin', { metadata: { kind: 'test' } });
    up.on('finish', () => resolve(up.id)).on('error', reject);
    up.end(data);
  });
  const chunks = [];
  await new Promise((resolve, reject) => {
    bucket.openDownloadStreamByName('blob.bin').on('data', (c) => chunks.push(c)).on('end', resolve).on('error', reject);
  });
  const back = Buffer.concat(chunks);
  const files = await bucket.find({}).toArray();
  const chunkCount = await client.db('files').collection('fs.chunks').countDocuments({ files_id: id });
  const indexes = (await client.db('files').collection('fs.chunks').listIndexes().toArray()).map((ix) => ix.key);
  await bucket.delete(id);
  const left = [await client.db('files').collection('fs.files').countDocuments(),
                await client.db('files').collection('fs.chunks').countDocuments()];
  return { same: back.equals(data), length: files[0].length, chunkSize: files[0].chunkSize,
           metadata: files[0].metadata, chunkCount, indexes, left };
};

class Monitor {
  constructor(client) {
    this.started = [];
    client.on('commandStarted', (e) => this.started.push(e.commandName));
  }

  count(name) {
    return this.started.filter((n) => n === name).length;
  }
}

async function main() {
  const [scenario, uri] = process.argv.slice(2);
  if (!scenarios[scenario]) throw new Error(`unknown scenario ${scenario}`);
  const client = new MongoClient(uri, { monitorCommands: true, serverSelectionTimeoutMS: 20000 });
  const monitor = new Monitor(client);
  await client.connect();
  try {
    const result = await scenarios[scenario](client, monitor);
    process.stdout.write(`${EJSON.stringify(result, { relaxed: false })}\n`);
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack}\n`);
  process.exit(1);
});
