/**
 * The API benchmark's baseline: a bare node:http server that reads a JSON body and answers 201
 * with a job-sized JSON document. Same client, same machine, same run: berth's submissions per
 * second divided by this one's is the share of the machine's HTTP ceiling berth reaches.
 */
import { createServer } from 'node:http';

const answer = JSON.stringify({ id: 1, state: 'queued', padding: 'x'.repeat(900) });
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString());
    res.writeHead(201, { 'content-type': 'application/json' });
    res.end(answer);
  });
});
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (address && typeof address === 'object')
    process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`);
});
