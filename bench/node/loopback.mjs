// Preloaded (node --import) into supergateway by scripts/bench: it has no
// listen-address option and would listen on every interface. This makes
// a listen(port[, cb]) without a host listen on 127.0.0.1 only.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === 'number' && typeof args[1] !== 'string') {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
