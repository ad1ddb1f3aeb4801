# The server as a container: listens on 5000 (the webhook inspector's reference deployment).
# Without DATABASE_URL it runs on embedded PostgreSQL (PGlite) in /app/data — mount a volume there to
# keep data; with DATABASE_URL=postgres://… it uses that server. tsx runs the TypeScript sources, and
# it is a runtime dependency, so the image installs the dependencies as locked (`npm ci`).
FROM node:20-slim
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund || npm install --no-save --no-audit --no-fund
COPY . .
ENV NODE_ENV=production \
    PORT=5000 \
    HOST=0.0.0.0 \
    DATA_DIR=/app/data
EXPOSE 5000
VOLUME ["/app/data"]
CMD ["npm", "start"]
